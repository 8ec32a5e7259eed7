#include "report_text.h"

#include "birth_window.h"
#include "memory_parts.h"
#include "printable_text.h"
#include "report_bins.h"
#include "report_labels.h"
#include "report_tree.h"
#include "row_selection.h"
#include "runtime_frames.h"
#include "short_names.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>

namespace leakwrap {
namespace {

std::string_view state_label(OwnerState state) {
    switch (state) {
        case OwnerState::alive: return "alive";
        case OwnerState::dead: return "dead (post-mortem)";
        case OwnerState::exited: return "exited";
        case OwnerState::stale: return "stale (pid reused)";
        case OwnerState::replaced: return "replaced by exec (post-mortem of the image before)";
    }
    return "unknown";
}

std::string bytes_with_human(uint64_t bytes) {
    const std::string exact = std::to_string(bytes) + " B";
    return bytes < 1024 ? exact : exact + " (" + human_bytes(bytes) + ")";
}

// std::setw counts bytes; size-class labels carry a multi-byte "≤".
std::string padded_left(const std::string& text, std::size_t width) {
    const auto characters = static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
    return text + std::string(width > characters ? width - characters : 0, ' ');
}

// Names are shortened unless asked for in full (--full-names, or the one site of --site).
bool full_names(const ReportOptions& options) { return options.full_names || options.site; }

void write_frame(std::ostream& out, std::size_t index, const ResolvedFrame& frame, bool full) {
    const std::string function = frame.function_or_unknown();
    out << "    #" << index << ' ' << hex_address(frame.address) << ' '
        << printable(full ? function : short_function_name(function));
    if (const auto location = source_location(frame); !location.empty()) out << " at " << printable(location);
    if (frame.module) {
        out << " (" << printable(std::filesystem::path(frame.module->str()).filename().string());
        if (!frame.function && frame.module_offset) out << '+' << hex_address(*frame.module_offset);
        out << ')';
    }
    if (!frame.note.empty()) out << " [" << printable(frame.note) << ']';
    if (frame.inlined) out << " [inlined]";
    out << '\n';
}

std::string row_title(const ReportRow& row, Grouping grouping, bool tables_were_full) {
    if (row.overflow)
        return tables_were_full ? "overflow site (allocations from stacks that found the site table full)"
                                : "overflow site (allocations from stacks that found no room in /dev/shm)";
    if (grouping == Grouping::ruby)
        return row.innermost_ruby() ? "ruby " + printable(ruby_location_text(*row.innermost_ruby()))
                                    : "(no Ruby frame)";
    return "site " + std::to_string(row.id);
}

// Where a row's live blocks are, when they are in more than one class: the classes holding the
// most, so that a Ruby line with blocks in dozens of classes still takes one short line.
void write_size_classes(std::ostream& out, const ReportRow& row) {
    constexpr std::size_t kClassesShown = 4;
    std::vector<SizeClassCounters> live;
    for (const auto& entry : row.size_classes())
        if (entry.counters.live_blocks() > 0) live.push_back(entry);
    if (live.size() < 2) return;
    std::stable_sort(live.begin(), live.end(),
                     [](const auto& a, const auto& b) { return a.counters.live_blocks() > b.counters.live_blocks(); });
    out << "    live by size class:";
    const char* separator = " ";
    for (std::size_t i = 0; i < std::min(kClassesShown, live.size()); ++i) {
        out << separator << size_class_label(live[i].size_class) << ' ' << live[i].counters.live_blocks();
        separator = ", ";
    }
    if (live.size() > kClassesShown) out << " and " << live.size() - kClassesShown << " more";
    out << '\n';
}

// When the row's live blocks were allocated: the span of their cells, and under --site each cell.
void write_births(std::ostream& out, const ReportRow& row, const Snapshot& snapshot, bool in_full) {
    const auto times = BirthTimes::of(snapshot);
    if (!times) return;
    const std::vector<CellCounters> cells = live_by_birth(row, snapshot);
    if (cells.empty()) return;
    out << "    live " << birth_span_text(*times, cells.front().cell, cells.back().cell) << '\n';
    if (!in_full) return;
    out << "    live by birth:\n";
    for (const CellCounters& cell : cells)
        out << "      " << birth_span_text(*times, cell.cell, cell.cell) << ": " << cell.counters.live_blocks()
            << " blocks, " << human_bytes(cell.counters.live_bytes()) << '\n';
}

// --site: every class the row ever allocated in, and with --children what each process holds.
void write_site_in_full(std::ostream& out, const ReportRow& row, const Snapshot& snapshot) {
    out << "    size classes:\n";
    out << "      " << padded_left("CLASS", 12) << std::right << std::setw(14) << "ALLOCS" << std::setw(14) << "FREES"
        << std::setw(14) << "LIVE_BLOCKS" << std::setw(14) << "LIVE_BYTES" << '\n';
    for (const auto& [size_class, counters] : row.size_classes())
        out << "      " << padded_left(size_class_label(size_class), 12) << std::setw(14) << counters.allocs
            << std::setw(14) << counters.frees << std::setw(14) << counters.live_blocks() << std::setw(14)
            << human_bytes(counters.live_bytes()) << '\n';
    const auto shares = row_split_by_process(row, snapshot);
    if (shares.empty()) return;
    out << "    by process:\n";
    for (const ProcessShare& share : shares)
        out << "      pid " << share.pid << ": " << bytes_with_human(share.counters.live_bytes()) << " live in "
            << share.counters.live_blocks() << " blocks; " << share.counters.allocs << " allocs, "
            << share.counters.frees << " frees\n";
}

void write_row(std::ostream& out, std::size_t rank, const ReportRow& row, const ReportInput& input) {
    const Counters& counters = row.counters;
    out << '\n' << '#' << rank << ' ' << row_title(row, input.options.by, input.snapshot.tables_were_full());
    if (row.estimated) out << " (estimated)";
    out << ": " << bytes_with_human(counters.live_bytes()) << " live in " << counters.live_blocks() << " blocks; "
        << counters.allocs << " allocs, " << counters.frees << " frees, " << bytes_with_human(counters.alloc_bytes)
        << " allocated\n";
    if (row.innermost_ruby() && input.options.by == Grouping::native)
        out << "    ruby: " << printable(ruby_location_text(*row.innermost_ruby())) << '\n';
    if (row.reduced) out << "    (innermost frames only: the site table was nearly full; raise LEAKWRAP_MAX_SITES)\n";
    write_births(out, row, input.snapshot, input.options.site.has_value());
    if (input.options.site)
        write_site_in_full(out, row, input.snapshot);
    else
        write_size_classes(out, row);
    // Numbered as a debugger numbers them, an inlined function a frame of its own; shown frames
    // keep their number in the whole stack, so that a gap shows where frames went.
    const auto shown = shown_frame_indexes(row, input.symbolizer, input.options.hide_runtime);
    auto next_shown = shown.begin();
    std::size_t index = 0, hidden = 0;
    for (std::size_t i = 0; i < row.frames().size(); ++i) {
        const AddressFrames& frames = input.symbolizer.resolve(row.frames()[i], row.module_generation());
        const bool is_shown = next_shown != shown.end() && *next_shown == i;
        if (is_shown)
            ++next_shown;
        else
            hidden += frames.size();
        for (const ResolvedFrame& frame : frames) {
            if (is_shown) write_frame(out, index, frame, full_names(input.options));
            ++index;
        }
    }
    if (hidden > 0) out << "    (" << hidden << " runtime frames hidden: --hide-runtime)\n";
    // The Ruby backtrace continues the native stack outwards: the VM called the native frames.
    if (input.options.by == Grouping::native)
        for (const RubyLocation& location : row.ruby())
            out << "    #" << index++ << " ruby " << printable(ruby_location_text(location)) << '\n';
}

void write_rows(std::ostream& out, const RowSelection& selection, const ReportInput& input) {
    if (input.options.site) return write_row(out, 1, selection.rows.front(), input);
    std::size_t rank = 0;
    for_each_ranked_row(input.snapshot, selection, input.options,
                        [&](const ReportRow& row) { write_row(out, ++rank, row, input); });
    if (rank < selection.kept_rows)
        out << "\n(" << selection.kept_rows - rank << " more rows not shown; --top 0 shows all)\n";
}

void write_size_class_table(std::ostream& out, const std::vector<ReportRow>& rows, const ReportInput& input) {
    out << "\nsize classes (exact, every block):\n";
    out << "  " << padded_left("CLASS", 12) << std::right << std::setw(14) << "ALLOCS" << std::setw(14) << "FREES"
        << std::setw(14) << "LIVE_BLOCKS" << std::setw(14) << "LIVE_BYTES" << '\n';
    for (const auto& entry : size_class_table(input.snapshot, rows)) {
        out << "  " << padded_left(size_class_label(entry.size_class), 12) << std::setw(14) << entry.counters.allocs
            << std::setw(14) << entry.counters.frees << std::setw(14) << entry.counters.live_blocks() << std::setw(14)
            << human_bytes(entry.counters.live_bytes()) << '\n';
        for (const ReportRow* row : entry.top_rows)
            out << "      " << std::setw(10) << row->in_size_class(entry.size_class).live_blocks() << " live  site "
                << row->id << "  "
                << printable(row_summary(*row, input.options.by, input.symbolizer, !full_names(input.options))) << '\n';
    }
}

// RSS explained (memory_parts.h): its parts, the heaps that hold the most, and the findings.
void write_memory_parts(std::ostream& out, const MemoryParts& parts) {
    out << "  RSS explained: " << memory_parts_summary(parts) << '\n';
    if (!parts.heap_list.empty()) {
        constexpr std::size_t kHeapsShown = 8;
        out << "  malloc's heaps by resident size:";
        const char* separator = " ";
        for (std::size_t i = 0; i < parts.heap_list.size() && i < kHeapsShown; ++i) {
            const MallocHeap& heap = parts.heap_list[i];
            out << separator << (heap.main ? std::string("main [heap]") : "thread arena at " + hex_address(heap.start))
                << ' ' << human_bytes(heap.resident);
            separator = ", ";
        }
        if (parts.heap_list.size() > kHeapsShown) out << " and " << parts.heap_list.size() - kHeapsShown << " more";
        out << '\n';
    }
    for (const std::string& finding : parts.findings) out << "  finding: " << finding << '\n';
}

// The allocator's own count, live or post mortem (its last reading); said when RSS explained
// could not weigh it (comparable_count in memory_parts.cpp).
void write_allocator_account(std::ostream& out, const Snapshot& snapshot, const std::optional<MemoryParts>& parts) {
    const std::optional<AllocatorAccount> account = allocator_account(snapshot);
    if (!account) return;
    constexpr std::size_t kArenasShown = 4;
    out << "  allocator: " << allocator_account_summary(*account)
        << (parts && !parts->allocator_not_weighed.empty()
                ? " (not weighed against the heaps shown above: " + parts->allocator_not_weighed + ")"
                : "")
        << '\n';
    if (const std::string arenas = arenas_summary(*account, kArenasShown); !arenas.empty())
        out << "  arenas holding the most free memory: " << arenas << '\n';
}

// The kernel's view next to leakwrap's, so that a reader can tell a leak (tracked live bytes
// grow) from memory outside the tracked heap (RSS grows alone) and from leakwrap's own.
void write_memory(std::ostream& out, const ReportInput& input) {
    const std::optional<ProcessMemory>& memory = input.snapshot.memory;
    if (!memory) {
        out << "memory: no RSS: "
            << (input.owner == OwnerState::alive ? "the segment was read from a file"
                                                 : "the process is gone (post mortem)")
            << '\n';
        write_allocator_account(out, input.snapshot, std::nullopt);
        return;
    }
    out << "memory: RSS " << human_bytes(memory->rss()) << " (anon " << human_bytes(memory->rss_anon) << ", file "
        << human_bytes(memory->rss_file) << ", shared " << human_bytes(memory->rss_shmem) << "); tracked live "
        << human_bytes(input.snapshot.totals.live_bytes()) << "; leakwrap's segment "
        << human_bytes(memory->segment_resident)
        << (input.snapshot.writer_private_bytes
                ? " resident (in shared), its private tables " + human_bytes(memory->leakwrap_private) + " (in anon)"
                : std::string(" resident (in shared; its private tables, in anon, are counted from "
                              "layout 7 on)"))
        << "; PSS " << human_bytes(memory->pss)
        << (input.snapshot.members.empty() ? ""
                                           : " (what the processes hold together: their RSS "
                                             "count a page they share once in each)")
        << '\n';
    const std::optional<MemoryParts> parts = explain_memory(input.snapshot);
    if (parts) write_memory_parts(out, *parts);
    write_allocator_account(out, input.snapshot, parts);
}

// A copy of a live segment takes the sites first and the bins last: the allocations and frees made
// in between are in the totals and not in the sites. Said, by how much, rather than hidden.
void write_live_skew(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    if (snapshot.sampled() || input.owner != OwnerState::alive || !snapshot.members.empty() || snapshot.birth_selection)
        return;
    const Counters sites = snapshot.sum_over_sites();
    if (sites.live_blocks() == snapshot.totals.live_blocks() && sites.live_bytes() == snapshot.totals.live_bytes())
        return;
    out << "read live: the sites add up to " << sites.live_blocks() << " live blocks ("
        << human_bytes(sites.live_bytes()) << "), the totals to " << snapshot.totals.live_blocks() << " ("
        << human_bytes(snapshot.totals.live_bytes())
        << "): the difference is what the process allocated and freed while the copy was taken\n";
}

// The birth grid, and what --born-after / --born-before kept.
void write_birth_grid(std::ostream& out, const Snapshot& snapshot) {
    const auto times = BirthTimes::of(snapshot);
    if (!times) return;
    out << "births: " << birth_grid_text(times->grid()) << '\n';
    if (!snapshot.birth_selection) return;
    const BirthSelection& selection = *snapshot.birth_selection;
    out << "born";
    if (selection.first_cell) out << " from " << birth_time_text(times->start_ns(*selection.first_cell));
    if (selection.end_cell) out << " before " << birth_time_text(times->start_ns(*selection.end_cell));
    out << " (--born-after and --born-before are taken to the start of their cell): the rows hold "
        << bytes_with_human(selection.live_bytes_kept) << " live in " << selection.live_blocks_kept
        << " blocks; left out " << bytes_with_human(selection.live_bytes_left_out) << " in "
        << selection.live_blocks_left_out << " blocks born outside it\n";
}

// A merged process tree (--children): which processes, and what each holds.
void write_processes(std::ostream& out, const Snapshot& snapshot) {
    if (snapshot.members.empty()) return;
    out << "processes: " << snapshot.members.size() << " merged (the pid and its descendants):";
    const char* separator = " ";
    for (const TreeMember& member : snapshot.members) {
        out << separator << member.pid << " live " << human_bytes(member.totals.live_bytes());
        separator = "; ";
    }
    out << '\n';
}

}  // namespace

void write_text_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    const Counters& totals = snapshot.totals;
    // An empty string: its process could not read it (no /proc), or it found no room.
    const std::string unknown = snapshot.lost_sites > 0 && !snapshot.tables_were_full()
                                    ? "(not recorded: /dev/shm was full)"
                                    : "(not recorded)";
    out << "pid " << snapshot.pid << " (" << state_label(input.owner) << ")  "
        << (snapshot.exe.empty() ? unknown : printable(snapshot.exe))
        << "  command: " << (snapshot.command_line.empty() ? unknown : printable(snapshot.command_line)) << '\n';
    out << "live: " << bytes_with_human(totals.live_bytes()) << " in " << totals.live_blocks() << " blocks; "
        << totals.allocs << " allocs, " << totals.frees << " frees, " << bytes_with_human(totals.alloc_bytes)
        << " allocated in total; " << snapshot.sites_in_use() << " sites\n";
    write_memory(out, input);
    write_birth_grid(out, snapshot);
    write_live_skew(out, input);
    write_processes(out, snapshot);
    if (snapshot.sampled())
        out << "sampled (LEAKWRAP_SAMPLE=" << snapshot.sample_interval
            << (snapshot.bins_estimated ? "): the totals, the size classes and the numbers per site are estimated\n"
                                        : "): the totals are exact, the numbers per site are estimated\n");
    if (snapshot.lost_sites > 0 && snapshot.tables_were_full())
        out << "warning: the site table overflowed: " << snapshot.lost_sites
            << " allocations from stacks without a record were counted in the overflow site "
               "(raise LEAKWRAP_MAX_SITES to see them separately)\n";
    else if (snapshot.lost_sites > 0)
        out << "warning: /dev/shm was full: " << snapshot.lost_sites
            << " allocations from stacks it had no room to record were counted in the overflow "
               "site, and what else needed room (the executable's name and command line, new "
               "modules) may be missing; free space in /dev/shm (LEAKWRAP_MAX_SITES does not help)\n";

    const RowSelection selection = selected_rows(snapshot, input.options, input.symbolizer);
    // The totals above are the whole process's; say what the rows below hold of it.
    if (selection.selected && !input.options.site)
        out << "focus (" << printable(input.options.focus.description()) << "): " << selection.kept_rows << " of "
            << selection.all_rows << " rows, " << bytes_with_human(selection.counters.live_bytes()) << " live in "
            << selection.counters.live_blocks() << " blocks\n";
    if (input.options.bins)
        write_size_class_table(out, selection.rows, input);
    else
        write_rows(out, selection, input);
}

}  // namespace leakwrap
