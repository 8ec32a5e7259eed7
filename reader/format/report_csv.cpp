#include "report_csv.h"

#include "report_bins.h"
#include "report_labels.h"
#include "row_selection.h"
#include "runtime_frames.h"

namespace leakwrap {
namespace {

// RFC 4180: a field with a separator, quote or line break is quoted, its quotes doubled.
std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

void write_row(std::ostream& out, std::size_t rank, const ReportRow& row, const ReportInput& input) {
    std::string stack;
    // The innermost frame shown, malloc's caller unless --hide-runtime passed over it, stands
    // for the row in the single-value columns.
    std::string function, location, module;
    const auto shown = shown_frame_indexes(row, input.symbolizer, input.options.hide_runtime);
    for (const std::size_t i : shown) {
        const AddressFrames& frames = input.symbolizer.resolve(row.frames()[i], row.module_generation());
        if (i == shown.front()) {
            function = frames.front().function_or_unknown();
            location = source_location(frames.front());
            module = frames.front().module.value_or("");
        }
        for (const ResolvedFrame& frame : frames) stack += (stack.empty() ? "" : ";") + frame.function_or_unknown();
    }
    if (row.overflow) function = "[overflow site]";
    const Counters& counters = row.counters;
    out << rank << ',' << row.id << ',' << counters.live_bytes() << ',' << counters.live_blocks() << ','
        << counters.allocs << ',' << counters.frees << ',' << counters.alloc_bytes << ',' << counters.free_bytes << ','
        << csv_field(function) << ',' << csv_field(location) << ',' << csv_field(module) << ',' << csv_field(stack)
        << ',' << csv_field(row.innermost_ruby() ? ruby_location_text(*row.innermost_ruby()) : "") << ','
        << (row.estimated ? "true" : "false") << '\n';
}

// Several rows per class go into one field each, separated by ';'.
void write_size_class_table(std::ostream& out, const std::vector<ReportRow>& rows, const ReportInput& input) {
    out << "class,limit,allocs,frees,live_blocks,live_bytes,top_sites,top_sites_summary\n";
    for (const auto& entry : size_class_table(input.snapshot, rows)) {
        std::string ids, summaries;
        for (const ReportRow* row : entry.top_rows) {
            const char* separator = ids.empty() ? "" : ";";
            ids += separator + std::to_string(row->id);
            summaries += separator + row_summary(*row, input.options.by, input.symbolizer);
        }
        const auto limit = size_class_limit_bytes(entry.size_class);
        out << entry.size_class << ',' << (limit ? std::to_string(*limit) : "") << ',' << entry.counters.allocs << ','
            << entry.counters.frees << ',' << entry.counters.live_blocks() << ',' << entry.counters.live_bytes() << ','
            << csv_field(ids) << ',' << csv_field(summaries) << '\n';
    }
}

}  // namespace

void write_csv_report(std::ostream& out, const ReportInput& input) {
    const RowSelection selection = selected_rows(input.snapshot, input.options, input.symbolizer);
    if (input.options.bins) return write_size_class_table(out, selection.rows, input);
    out << "rank,id,live_bytes,live_blocks,allocs,frees,alloc_bytes,free_bytes,"
           "function,location,module,stack,ruby,estimated\n";
    std::size_t rank = 0;
    for_each_ranked_row(input.snapshot, selection, input.options,
                        [&](const ReportRow& row) { write_row(out, ++rank, row, input); });
}

}  // namespace leakwrap
