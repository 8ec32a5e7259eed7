#include "report_json.h"

#include "birth_window.h"
#include "memory_parts.h"
#include "report_bins.h"
#include "report_labels.h"
#include "report_tree.h"
#include "row_selection.h"
#include "runtime_frames.h"

#include <nlohmann/json.hpp>

namespace leakwrap {
namespace {

using nlohmann::json;

template <class T>
json or_null(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}
json or_null(const std::optional<SharedText>& value) { return value ? json(value->str()) : json(nullptr); }

json frame_json(const ResolvedFrame& frame) {
    json result = {
        {"addr", hex_address(frame.address)}, {"function", or_null(frame.function)}, {"file", or_null(frame.file)},
        {"line", or_null(frame.line)},        {"module", or_null(frame.module)},
    };
    if (frame.module_offset) result["module_offset"] = hex_address(*frame.module_offset);
    if (!frame.note.empty()) result["note"] = frame.note.str();
    if (frame.inlined) result["inlined"] = true;
    return result;
}

json ruby_json(const RubyLocation* ruby) {
    if (ruby == nullptr) return nullptr;
    return {{"file", ruby->file.str()}, {"line", ruby->line}};
}

json ruby_frames_json(const RubyBacktrace& frames) {
    json out = json::array();
    for (const RubyLocation& frame : frames) out.push_back(ruby_json(&frame));
    return out;
}

json size_classes_json(const std::vector<SizeClassCounters>& size_classes) {
    json result = json::array();
    for (const auto& [size_class, counters] : size_classes)
        result.push_back({
            {"class", size_class},
            {"limit", or_null(size_class_limit_bytes(size_class))},
            {"live_blocks", counters.live_blocks()},
            {"live_bytes", counters.live_bytes()},
            {"allocs", counters.allocs},
            {"frees", counters.frees},
        });
    return result;
}

}  // namespace

json report_row_json(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime) {
    json frames = json::array();
    const auto shown = shown_frame_indexes(row, symbolizer, hide_runtime);
    for (const std::size_t i : shown)
        for (const ResolvedFrame& frame : symbolizer.resolve(row.frames()[i], row.module_generation()))
            frames.push_back(frame_json(frame));
    json object = {
        {"id", row.id},
        {"overflow", row.overflow},
        {"estimated", row.estimated},
        {"live_bytes", row.counters.live_bytes()},
        {"live_blocks", row.counters.live_blocks()},
        {"allocs", row.counters.allocs},
        {"frees", row.counters.frees},
        {"alloc_bytes", row.counters.alloc_bytes},
        {"free_bytes", row.counters.free_bytes},
        {"ruby", ruby_json(row.innermost_ruby())},
        {"ruby_frames", ruby_frames_json(row.ruby())},
        {"reduced", row.reduced},
        {"frames", std::move(frames)},
        {"size_classes", size_classes_json(row.size_classes())},
        {"records", row.records()},
    };
    if (hide_runtime) {
        std::size_t all_frames = 0;  // inlined functions counted, as in "frames"
        for (const uint64_t address : row.frames())
            all_frames += symbolizer.resolve(address, row.module_generation()).size();
        object["hidden_frames"] = all_frames - object["frames"].size();
    }
    return object;
}

namespace {

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

json cell_span_json(const BirthTimes& times, uint32_t cell) {
    const auto end = times.end_ns(cell);
    return {
        {"cell", cell}, {"from_s", seconds(times.start_ns(cell))}, {"to_s", end ? json(seconds(*end)) : json(nullptr)}};
}

// The grid, in seconds since the process started, and what --born-after / --born-before kept.
json births_json(const Snapshot& snapshot, const BirthTimes& times) {
    const BirthGrid& grid = times.grid();
    json births = {{"cells", grid.cells},
                   {"first_cells_s", seconds(static_cast<int64_t>(grid.floor_ns))},
                   {"first_cells_until_s", seconds(times.start_ns(layout::kBirthLinearCells))},
                   {"then_cell_of_time_since_start", 0.125},
                   {"origin_since_start_s", seconds(times.start_ns(0))}};
    if (const auto& selection = snapshot.birth_selection) {
        births["selection"] = {
            {"from_s", selection->first_cell ? json(seconds(times.start_ns(*selection->first_cell))) : json(nullptr)},
            {"before_s", selection->end_cell ? json(seconds(times.start_ns(*selection->end_cell))) : json(nullptr)},
            {"live_bytes", selection->live_bytes_kept},
            {"live_blocks", selection->live_blocks_kept},
            {"left_out_live_bytes", selection->live_bytes_left_out},
            {"left_out_live_blocks", selection->live_blocks_left_out},
        };
    }
    return births;
}

// The cells of a row's live blocks, oldest first.
json row_births_json(const ReportRow& row, const Snapshot& snapshot, const BirthTimes& times) {
    json cells = json::array();
    for (const CellCounters& cell : live_by_birth(row, snapshot)) {
        json entry = cell_span_json(times, cell.cell);
        entry["live_blocks"] = cell.counters.live_blocks();
        entry["live_bytes"] = cell.counters.live_bytes();
        cells.push_back(std::move(entry));
    }
    return cells;
}

// What --focus, --ignore or --site kept of the rows; the totals stay the whole process's.
json selection_json(const RowSelection& selection, const ReportOptions& options) {
    return {{"focus", options.focus.description()},
            {"site", or_null(options.site)},
            {"rows", selection.kept_rows},
            {"all_rows", selection.all_rows},
            {"live_bytes", selection.counters.live_bytes()},
            {"live_blocks", selection.counters.live_blocks()}};
}

// A process of a merged tree (--children), with what it holds: of the whole report, or of a row.
json process_json(int32_t pid, const Counters& counters) {
    return {{"pid", pid},
            {"live_bytes", counters.live_bytes()},
            {"live_blocks", counters.live_blocks()},
            {"allocs", counters.allocs},
            {"frees", counters.frees}};
}

json processes_json(const Snapshot& snapshot) {
    json processes = json::array();
    for (const TreeMember& member : snapshot.members) {
        json process = process_json(member.pid, member.totals);
        process["command_line"] = member.command_line;
        process["memory"] = process_memory_json(member.memory);
        processes.push_back(std::move(process));
    }
    return processes;
}

json bins_json(const std::vector<SizeClassEntry>& table) {
    json bins = json::array();
    for (const auto& entry : table) {
        json top_rows = json::array();
        for (const ReportRow* row : entry.top_rows) top_rows.push_back(row->id);
        bins.push_back({
            {"class", entry.size_class},
            {"limit", or_null(size_class_limit_bytes(entry.size_class))},
            {"allocs", entry.counters.allocs},
            {"frees", entry.counters.frees},
            {"live_blocks", entry.counters.live_blocks()},
            {"live_bytes", entry.counters.live_bytes()},
            {"top_sites", std::move(top_rows)},
        });
    }
    return bins;
}

}  // namespace

// The size-class table is always included, --bins or not: tools that poll the report rely on it.
void visit_json_report(const ReportInput& input, const std::function<void(const json&)>& head,
                       const std::function<void(const json&)>& site) {
    const Snapshot& snapshot = input.snapshot;
    const Counters& totals = snapshot.totals;
    const RowSelection selection = selected_rows(snapshot, input.options, input.symbolizer);
    const std::vector<ReportRow>& rows = selection.rows;
    json report = {
        {"pid", snapshot.pid},
        {"parent_pid", snapshot.parent_pid},
        {"exe", snapshot.exe},
        {"command_line", snapshot.command_line},
        {"state", owner_state_name(input.owner)},
        {"mode", snapshot.sampled() ? "sampled" : "exact"},
        {"sample_interval", snapshot.sample_interval},
        {"totals_estimated", snapshot.bins_estimated},
        {"by", grouping_name(input.options.by)},
        {"totals",
         {
             {"live_bytes", totals.live_bytes()},
             {"live_blocks", totals.live_blocks()},
             {"allocs", totals.allocs},
             {"frees", totals.frees},
             {"alloc_bytes", totals.alloc_bytes},
             {"free_bytes", totals.free_bytes},
             {"sites", snapshot.sites_in_use()},
             {"lost_sites", snapshot.lost_sites},
             {"lost_sites_because", snapshot.lost_sites == 0      ? nullptr
                                    : snapshot.tables_were_full() ? json("site_table_full")
                                                                  : json("dev_shm_full")},
             {"memory", process_memory_json(snapshot.memory)},
         }},
        {"bins", bins_json(size_class_table(snapshot, rows))},
    };
    if (!snapshot.sampled() && snapshot.members.empty() && !snapshot.birth_selection) {
        const Counters sites = snapshot.sum_over_sites();
        report["totals"]["sites_live_blocks"] = sites.live_blocks();
        report["totals"]["sites_live_bytes"] = sites.live_bytes();
    }
    if (!snapshot.members.empty()) report["processes"] = processes_json(snapshot);
    if (const std::optional<MemoryParts> parts = explain_memory(snapshot))
        report["totals"]["memory"]["explained"] = memory_parts_json(*parts);
    if (const std::optional<AllocatorAccount> account = allocator_account(snapshot))
        report["totals"]["allocator"] = allocator_account_json(*account);
    if (selection.selected) report["selection"] = selection_json(selection, input.options);
    const auto times = BirthTimes::of(snapshot);
    if (times) report["births"] = births_json(snapshot, *times);
    head(report);
    for_each_ranked_row(snapshot, selection, input.options, [&](const ReportRow& row) {
        json object = report_row_json(row, input.symbolizer, input.options.hide_runtime);
        if (times) object["live_by_birth"] = row_births_json(row, snapshot, *times);
        if (!snapshot.members.empty()) {
            json split = json::array();
            for (const ProcessShare& share : row_split_by_process(row, snapshot))
                split.push_back(process_json(share.pid, share.counters));
            object["processes"] = std::move(split);
        }
        site(object);
    });
}

// Streamed: every member but the sites, then one site a line, each rendered and written on its
// own: a document of every row of a large process would be many times the segment's size.
void write_json_report(std::ostream& out, const ReportInput& input) {
    // Replace, not throw, on invalid UTF-8: paths and command lines are arbitrary bytes.
    const auto text = [](const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); };
    const char* separator = "\n";
    visit_json_report(
        input,
        [&](const json& head) {
            out << '{';
            for (const auto& [key, value] : head.items()) out << text(key) << ": " << text(value) << ",\n";
            out << "\"sites\": [";
        },
        [&](const json& site) {
            out << separator << text(site);
            separator = ",\n";
        });
    out << "\n]}\n";
}

}  // namespace leakwrap
