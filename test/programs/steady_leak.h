// What steady_leak does per tick, shared by the program and the time-series tests. Each site
// uses its own block size, so each fills its own size class and the bins tell them apart.
#pragma once

#include <cstddef>

namespace steady_leak {

// leak_steadily: blocks that are never freed, the same number every tick.
inline constexpr std::size_t kLeakSize = 300;  // size class ≤320 B
inline constexpr std::size_t kLeaksPerTick = 4;

// fill_bounded_cache: inserts every tick; once full, each insertion evicts (frees) the oldest
// entry, so its live bytes climb for kCacheCapacity / kCacheInsertsPerTick ticks and then stay.
inline constexpr std::size_t kCacheEntrySize = 1000;  // size class ≤1 KiB
inline constexpr std::size_t kCacheCapacity = 48;
inline constexpr std::size_t kCacheInsertsPerTick = 2;
inline constexpr std::size_t kCacheFullBytes = kCacheCapacity * kCacheEntrySize;

// churn_temporaries: blocks freed within the tick that allocated them.
inline constexpr std::size_t kChurnSize = 2000;  // size class ≤2 KiB
inline constexpr std::size_t kChurnPerTick = 8;

}  // namespace steady_leak
