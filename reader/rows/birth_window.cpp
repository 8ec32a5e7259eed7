#include "birth_window.h"

#include "sampling_estimate.h"

#include <leakwrap/segment_layout.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace leakwrap {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// /proc/<pid>/stat counts a process's start in clock ticks since boot, as CLOCK_BOOTTIME does
// in ns.
int64_t start_boot_ns(const Snapshot& snapshot) {
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    if (ticks_per_second <= 0 || snapshot.start_time_ticks == 0) return 0;
    return static_cast<int64_t>(snapshot.start_time_ticks * (kNsPerSecond / ticks_per_second));
}

}  // namespace

std::optional<BirthTimes> BirthTimes::of(const Snapshot& snapshot) {
    if (!snapshot.births) return std::nullopt;
    const int64_t start = start_boot_ns(snapshot);
    // Without the start (a segment of another boot is read from a file alike), the origin
    // stands for it: the writer makes its segment within milliseconds of the start.
    const int64_t origin = static_cast<int64_t>(snapshot.births->origin_boot_ns);
    return BirthTimes(*snapshot.births, start == 0 ? 0 : origin - start);
}

int64_t BirthTimes::start_ns(uint32_t cell) const { return since_start_ns(grid_.cell_start_ns(cell)); }

std::optional<int64_t> BirthTimes::end_ns(uint32_t cell) const {
    const auto end = grid_.cell_end_ns(cell);
    if (!end) return std::nullopt;
    return since_start_ns(*end);
}

uint32_t BirthTimes::cell_at(uint64_t since_start_ns) const {
    const int64_t since_origin = static_cast<int64_t>(since_start_ns) - origin_since_start_ns_;
    return grid_.cell_at(since_origin < 0 ? 0 : static_cast<uint64_t>(since_origin));
}

void keep_births_within(Snapshot& snapshot, const BirthWindow& window) {
    const auto times = BirthTimes::of(snapshot);
    if (!times)
        throw std::runtime_error(
            snapshot.members.empty()
                ? "this segment has no birth times (written by a libleakwrap.so before layout 8): "
                  "--born-after and --born-before need them"
                : "the processes of this tree do not share one birth grid (some were not forked "
                  "from the others): --born-after and --born-before need one, read them one by one");
    BirthSelection selection;
    if (window.after_ns) selection.first_cell = times->cell_at(*window.after_ns);
    if (window.before_ns) selection.end_cell = times->cell_at(*window.before_ns);
    const auto within = [&](const Site& site) {
        if (site.overflow()) return false;
        const uint32_t cell = site.birth_cell();
        return (!selection.first_cell || cell >= *selection.first_cell) &&
               (!selection.end_cell || cell < *selection.end_cell);
    };
    std::erase_if(snapshot.sites, [&](const Site& site) {
        const Counters counters = estimated_counters(site.counters(), snapshot.sample_interval);
        if (within(site)) {
            selection.live_blocks_kept += counters.live_blocks();
            selection.live_bytes_kept += counters.live_bytes();
            return false;
        }
        if (site.in_use()) ++selection.records_left_out;
        selection.live_blocks_left_out += counters.live_blocks();
        selection.live_bytes_left_out += counters.live_bytes();
        return true;
    });
    snapshot.birth_selection = selection;
}

std::vector<CellCounters> live_by_birth(const ReportRow& row, const Snapshot& snapshot) {
    std::vector<CellCounters> cells;
    if (!snapshot.births) return cells;
    for (const Site* site : row.record_sites) {
        if (site->overflow()) continue;
        const Counters counters = estimated_counters(site->counters(), snapshot.sample_interval);
        if (counters.live_blocks() == 0) continue;
        const auto at = std::lower_bound(cells.begin(), cells.end(), site->birth_cell(),
                                         [](const CellCounters& entry, uint32_t cell) { return entry.cell < cell; });
        if (at == cells.end() || at->cell != site->birth_cell())
            cells.insert(at, {site->birth_cell(), counters});
        else
            at->counters += counters;
    }
    return cells;
}

std::string birth_time_text(int64_t since_start_ns) {
    const double seconds = static_cast<double>(since_start_ns) / kNsPerSecond;
    const double magnitude = std::fabs(seconds);
    char text[48];
    if (magnitude < 100)
        std::snprintf(text, sizeof text, "%.1f s", seconds);
    else if (magnitude < 3600)
        std::snprintf(text, sizeof text, "%d min %d s", static_cast<int>(seconds / 60),
                      static_cast<int>(std::fmod(magnitude, 60)));
    else if (magnitude < 86400)
        std::snprintf(text, sizeof text, "%d h %d min", static_cast<int>(seconds / 3600),
                      static_cast<int>(std::fmod(magnitude, 3600) / 60));
    else
        std::snprintf(text, sizeof text, "%d d %d h", static_cast<int>(seconds / 86400),
                      static_cast<int>(std::fmod(magnitude, 86400) / 3600));
    return text;
}

std::string birth_span_text(const BirthTimes& times, uint32_t oldest_cell, uint32_t youngest_cell) {
    const auto end = times.end_ns(youngest_cell);
    if (!end) return "born from " + birth_time_text(times.start_ns(oldest_cell)) + " on";
    return "born " + birth_time_text(times.start_ns(oldest_cell)) + " to " + birth_time_text(*end);
}

std::string birth_grid_text(const BirthGrid& grid) {
    const int64_t linear_end = static_cast<int64_t>(grid.cell_start_ns(layout::kBirthLinearCells));
    return "known to " + birth_time_text(static_cast<int64_t>(grid.floor_ns)) + " for the first " +
           birth_time_text(linear_end) + ", then to 1/8 of the time since the start";
}

}  // namespace leakwrap
