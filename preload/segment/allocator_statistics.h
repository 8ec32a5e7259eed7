// The allocator's own account of its memory, published into the segment (AllocatorStatistics,
// R11), so that a reader can tell free memory the allocator keeps, and what of it the allocator
// would hand back, from memory outside malloc, without running anything in the target.
//
// Read by a thread in an allocation's bookkeeping, when the birth clock's slow path finds a
// reading due (record/birth_clock.h): an allocation pays nothing beyond the birth cell's check.
// The guard is held (I1) and no lock of the allocator is (I2). glibc's malloc_info() then locks
// each arena in turn while it walks the arena's free chunks, and jemalloc's mallctl() its
// statistics' locks (I3): neither calls anything of ours while holding them. Signals are blocked
// meanwhile, so that a handler that allocates never waits for an arena lock its own thread holds
// (I4), and cancellation is held off (I8).
#pragma once

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

// The shortest time between two readings; a reading that took long spaces the next one further
// (kAllocatorStatisticsShare), since malloc_info() takes time in proportion to the free chunks.
inline constexpr uint64_t kAllocatorStatisticsIntervalNs = 1'000'000'000;
inline constexpr uint64_t kAllocatorStatisticsShare = 100;  // at most 1/100 of one thread's time

// Reads and publishes the statistics if a reading is due at `since_origin_ns` (the birth clock's
// time) and no other thread is reading them, with the blocks counted as it begins (which the
// record layer counts: count_blocks); returns the time the next one is due.
uint64_t read_allocator_statistics_when_due(uint64_t since_origin_ns, layout::BlockTotals (*count_blocks)());

// After fork, in the child's only thread: a reading that another thread of the parent was
// taking is not the child's (the child's segment starts with none, I5).
void reset_allocator_statistics_in_child();

}  // namespace leakwrap
