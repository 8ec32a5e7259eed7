#include "report.h"

#include <filesystem>

namespace leakwrap {
namespace {

std::string_view state_label(OwnerState state) {
    switch (state) {
        case OwnerState::alive:
            return "alive";
        case OwnerState::dead:
            return "dead (post-mortem)";
        case OwnerState::exited:
            return "exited";
        case OwnerState::stale:
            return "stale (pid reused)";
    }
    return "unknown";
}

std::string bytes_with_human(uint64_t bytes) {
    const std::string exact = std::to_string(bytes) + " B";
    return bytes < 1024 ? exact : exact + " (" + human_bytes(bytes) + ")";
}

void write_frame(std::ostream& out, std::size_t index, const ResolvedFrame& frame) {
    out << "    #" << index << ' ' << hex_address(frame.address) << ' '
        << frame.function.value_or("??");
    if (const auto location = source_location(frame); !location.empty()) out << " at " << location;
    if (frame.module) {
        out << " (" << std::filesystem::path(*frame.module).filename().string();
        if (!frame.function && frame.module_offset) out << '+' << hex_address(*frame.module_offset);
        out << ')';
    }
    if (!frame.note.empty()) out << " [" << frame.note << ']';
    out << '\n';
}

void write_site(std::ostream& out, std::size_t rank, const Site& site, const ReportInput& input) {
    out << '\n' << '#' << rank << ' ';
    if (site.overflow)
        out << "overflow site (allocations from stacks that found the site table full)";
    else
        out << "site " << site.id;
    out << ": " << bytes_with_human(site.live_bytes) << " live in " << site.live_blocks
        << " blocks; " << site.allocs << " allocs, " << site.frees << " frees, "
        << bytes_with_human(site.alloc_bytes) << " allocated\n";
    for (std::size_t i = 0; i < site.frames.size(); ++i)
        write_frame(out, i, input.symbolizer.resolve(site.frames[i], site.module_generation));
}

}  // namespace

void write_text_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    const Totals& totals = snapshot.totals;
    out << "pid " << snapshot.pid << " (" << state_label(input.owner) << ")  " << snapshot.exe
        << "  command: " << snapshot.command_line << '\n';
    out << "live: " << bytes_with_human(totals.live_bytes) << " in " << totals.live_blocks
        << " blocks; " << totals.allocs << " allocs, " << totals.frees << " frees, "
        << bytes_with_human(totals.alloc_bytes) << " allocated in total; " << snapshot.sites.size()
        << " sites\n";
    if (snapshot.lost_sites > 0)
        out << "warning: the site table overflowed: " << snapshot.lost_sites
            << " distinct stacks were counted in the overflow site "
               "(raise LEAKWRAP_MAX_SITES to see them separately)\n";

    const auto ranked = ranked_sites(snapshot, input.options);
    for (std::size_t rank = 0; rank < ranked.size(); ++rank)
        write_site(out, rank + 1, *ranked[rank], input);
    if (ranked.size() < snapshot.sites.size())
        out << "\n(" << snapshot.sites.size() - ranked.size()
            << " more sites not shown; --top 0 shows all)\n";
}

}  // namespace leakwrap
