// The birth cell of an allocation made now (segment_layout.h, R9): the grid's cell of the time
// since the origin, read from the coarse monotonic clock.
//
// The coarse clock is the one the kernel updates at each tick (a few milliseconds): reading it
// is a load from the vDSO's page, without the time-stamp counter that the precise clocks read,
// which under a hypervisor costs several times more. So an allocation may be counted in the cell
// before its own, if it comes within one tick after the cell's start; never in a later one.
//
// The cell and the end of its time are one word, so that a thread never pairs a cell with
// another cell's end; any thread that finds the end passed moves it on (monotonically: a thread
// that read the clock earlier never moves it back). The end is the cell's, or sooner the time of
// the allocator's next statistics reading, which the thread that finds it passed takes
// (segment/allocator_statistics.h): one check per allocation serves both. Lock-free and
// allocation-free, but for that reading.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

// Starts the grid now and records it in a new process's header. A child made by fork() keeps
// its parent's grid, clock and header fields alike, as it keeps the parent's blocks.
void start_birth_clock(layout::Header* h);

namespace birth_clock_detail {
inline constexpr unsigned kCellShift = 56;
inline constexpr uint64_t kEndMask = (uint64_t{1} << kCellShift) - 1;
extern constinit uint64_t g_origin_ns;                  // coarse monotonic time of birth time 0
extern constinit std::atomic<uint64_t> g_cell_and_end;  // cell << 56 | end of its time
uint32_t advance(uint64_t since_origin_ns);

inline uint64_t coarse_monotonic_ns() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
}
}  // namespace birth_clock_detail

inline uint32_t current_birth_cell() {
    using namespace birth_clock_detail;
    const uint64_t since_origin = coarse_monotonic_ns() - g_origin_ns;
    const uint64_t cell_and_end = g_cell_and_end.load(std::memory_order_relaxed);
    if (__builtin_expect(since_origin < (cell_and_end & kEndMask), 1))
        return static_cast<uint32_t>(cell_and_end >> kCellShift);
    return advance(since_origin);
}

}  // namespace leakwrap
