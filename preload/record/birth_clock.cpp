#include "birth_clock.h"

#include <unistd.h>

#include <algorithm>

#include "allocator_statistics.h"
#include "bins.h"

namespace leakwrap {
namespace birth_clock_detail {

// Until a segment starts the grid, every birth is cell 0, which never ends: no site is counted
// before there is a segment.
constinit uint64_t g_origin_ns = 0;
constinit std::atomic<uint64_t> g_cell_and_end{kEndMask};

__attribute__((noinline, cold)) uint32_t advance(uint64_t since_origin_ns) {
    const uint64_t next_reading = read_allocator_statistics_when_due(since_origin_ns, counted_block_totals);
    uint64_t current = g_cell_and_end.load(std::memory_order_relaxed);
    for (;;) {
        uint32_t cell = static_cast<uint32_t>(current >> kCellShift);
        if (since_origin_ns < (current & kEndMask)) return cell;  // moved on by another thread meanwhile
        // The last cell holds every later birth (even past the 2^56 ns an end can say).
        uint64_t cell_end = kEndMask;
        while (cell + 1 < layout::kMaxBirthCells) {
            cell_end = layout::birth_cell_start_ns(cell + 1, layout::kBirthFloorNs);
            if (since_origin_ns < cell_end) break;
            ++cell;
            cell_end = kEndMask;
        }
        const uint64_t moved = uint64_t{cell} << kCellShift | std::min(cell_end, next_reading);
        if (g_cell_and_end.compare_exchange_weak(current, moved, std::memory_order_relaxed)) return cell;
    }
}

}  // namespace birth_clock_detail

void start_birth_clock(layout::Header* h) {
    using namespace birth_clock_detail;
    const auto ns = [](const timespec& t) { return uint64_t(t.tv_sec) * 1'000'000'000u + uint64_t(t.tv_nsec); };
    timespec boot{};
    clock_gettime(CLOCK_BOOTTIME, &boot);
    const uint64_t coarse = coarse_monotonic_ns();
    // Birth time 0 is the process's start, as /proc/<pid>/stat counts it (in clock ticks since
    // boot), so that the grid's cells fall on whole times since the start, those a user asks for;
    // the segment is made milliseconds after it.
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    const uint64_t now_boot = ns(boot);
    uint64_t origin_boot = now_boot;
    if (ticks_per_second > 0 && h->start_time_ticks != 0) {
        const uint64_t start_boot = h->start_time_ticks * (1'000'000'000u / uint64_t(ticks_per_second));
        if (start_boot <= now_boot && now_boot - start_boot <= coarse) origin_boot = start_boot;
    }
    g_origin_ns = coarse - (now_boot - origin_boot);
    h->birth_origin_boot_ns = origin_boot;
    h->birth_floor_ns = layout::kBirthFloorNs;
    h->birth_cells = layout::kMaxBirthCells;
    g_cell_and_end.store(layout::next_birth_cell_start_ns(0, 0, layout::kBirthFloorNs), std::memory_order_relaxed);
}

}  // namespace leakwrap
