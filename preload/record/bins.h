// Exact per-size-class counters of every block (the jemalloc-style bins), whatever its site and
// whether or not it was sampled. Every thread owns a shard while it runs, so it updates its
// counters with plain stores instead of locked instructions and never shares a cache line with
// another thread; threads beyond the number of shards share the last one, atomically.
// The reader sums the shards.
#pragma once

#include <atomic>
#include <cstdint>

#include "segment.h"
#include "thread_state.h"

namespace leakwrap {

inline constexpr uint32_t kBinShards = 64;
inline constexpr uint32_t kSharedBinShard = kBinShards - 1;

void init_bin_shards();
uint32_t claim_bin_shard();  // shard + 1
void reset_bin_shards_after_fork();

// The shards that may hold counts (bins or site deltas): 0 to bin_shards_in_use() - 1 and the
// shared one. The others are zero for good, so a fork need not copy them: each page copied is a
// fault in the parent and one in the child, which for all 64 shards would dwarf a small
// program's own fork.
uint32_t bin_shards_in_use();
// Every shard's counters added up, read while other threads count (each counter is monotonic,
// so the totals are no larger than the counts a later read finds).
layout::BlockTotals counted_block_totals();
template <typename Visit>
void for_each_bin_shard_in_use(Visit visit) {
    const uint32_t in_use = bin_shards_in_use();
    for (uint32_t shard = 0; shard < in_use && shard < kSharedBinShard; ++shard) visit(shard);
    visit(kSharedBinShard);
}

// Adds to a counter of the calling thread's shard. Only its owner writes an owned shard, so a
// relaxed load and store suffice (an aligned 64-bit store is never torn for the reader).
inline void add_to_counter(uint64_t& counter, uint64_t amount, bool owned) {
    std::atomic_ref<uint64_t> value(counter);
    if (__builtin_expect(owned, 1))
        value.store(value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
    else
        value.fetch_add(amount, std::memory_order_relaxed);
}

// The calling thread's shard, claimed at its first count.
inline uint32_t current_bin_shard() {
    uint32_t shard = t_thread.bin_shard;
    if (__builtin_expect(shard == 0, 0)) shard = claim_bin_shard();
    return shard - 1;
}

inline void count_in_bin(uint32_t size_class, uint64_t bytes, bool allocation) {
    uint32_t shard = current_bin_shard();
    bool owned = shard != kSharedBinShard;
    layout::BinCounters* bin = g_segment.bins + layout::bin_index(size_class, shard);
    if (allocation) {
        add_to_counter(bin->alloc_bytes, bytes, owned);
        add_to_counter(bin->allocs, 1, owned);
    } else {
        add_to_counter(bin->free_bytes, bytes, owned);
        add_to_counter(bin->frees, 1, owned);
    }
}

inline void count_bin_allocation(uint32_t size_class, uint64_t bytes) { count_in_bin(size_class, bytes, true); }
inline void count_bin_free(uint32_t size_class, uint64_t bytes) { count_in_bin(size_class, bytes, false); }

}  // namespace leakwrap
