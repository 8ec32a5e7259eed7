#include "report_folded.h"

#include "report_labels.h"
#include "row_selection.h"
#include "runtime_frames.h"

#include <filesystem>

namespace leakwrap {
namespace {

// ';' separates frames and a line ends the record; a name must contain neither.
std::string folded_frame(std::string name) {
    for (char& c : name)
        if (c == ';')
            c = ':';
        else if (c == '\n' || c == '\r')
            c = ' ';
    return name;
}

uint64_t folded_value(const ReportRow& row, ValueKind value) {
    return value == ValueKind::alloc ? row.counters.alloc_bytes : row.counters.live_bytes();
}

}  // namespace

std::string frame_name(const ResolvedFrame& frame) {
    if (frame.function) return frame.function->str();
    if (frame.module && frame.module_offset)
        return std::filesystem::path(frame.module->str()).filename().string() + '+' + hex_address(*frame.module_offset);
    return hex_address(frame.address);
}

std::string ruby_frame_name(const RubyLocation& location) { return "ruby:" + ruby_location_text(location); }

std::vector<RowFrame> row_frames(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime) {
    if (row.overflow) return {{"[overflow]"}};
    std::vector<RowFrame> frames;
    for (const std::size_t i : shown_frame_indexes(row, symbolizer, hide_runtime))
        for (const ResolvedFrame& frame : symbolizer.resolve(row.frames()[i], row.module_generation()))
            frames.push_back({frame_name(frame), &frame, nullptr});
    // Outside the native frames: the native stack of a Ruby thread ends where the VM called in,
    // so a flame graph roots at the app's outermost Ruby frame, not at the interpreter's loop.
    for (const RubyLocation& location : row.ruby()) frames.push_back({ruby_frame_name(location), nullptr, &location});
    if (frames.empty()) frames.push_back({kNoStackFrame});
    return frames;
}

void write_folded_report(std::ostream& out, const ReportInput& input) {
    const ValueKind value = input.options.value;
    ReportOptions every_row_by_value = input.options;
    every_row_by_value.top = 0;
    every_row_by_value.sort = value == ValueKind::alloc ? SortKey::bytes : SortKey::live;

    const RowSelection selection = selected_rows(input.snapshot, every_row_by_value, input.symbolizer);
    for_each_ranked_row(input.snapshot, selection, every_row_by_value, [&](const ReportRow& row) {
        const uint64_t bytes = folded_value(row, value);
        if (bytes == 0) return;
        const auto frames = row_frames(row, input.symbolizer, input.options.hide_runtime);
        for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame)
            out << (frame == frames.rbegin() ? "" : ";") << folded_frame(frame->name);
        out << ' ' << bytes << '\n';
    });
}

}  // namespace leakwrap
