#include "bins.h"

#include <pthread.h>

#include "guard.h"

namespace leakwrap {
namespace {

constinit std::atomic<bool> g_shard_owned[kSharedBinShard]{};
// Shards are claimed lowest first, and a thread's counters go to its shard only once the claim
// is made; so shards from this count up to the shared one have never counted anything.
constinit std::atomic<uint32_t> g_shards_claimed_ever{0};
constinit pthread_key_t g_shard_key{};
constinit bool g_shard_key_ready = false;

// Thread exit: give the shard back (its counts stay). Frees made later in this thread's exit
// use the shared shard.
void release_bin_shard(void* shard_plus_one) {
    auto shard = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(shard_plus_one)) - 1;
    t_thread.bin_shard = kSharedBinShard + 1;
    if (shard < kSharedBinShard) g_shard_owned[shard].store(false, std::memory_order_release);
}

}  // namespace

void init_bin_shards() { g_shard_key_ready = pthread_key_create(&g_shard_key, release_bin_shard) == 0; }

uint32_t claim_bin_shard() {
    uint32_t shard = kSharedBinShard;
    if (g_shard_key_ready) {
        for (uint32_t candidate = 0; candidate < kSharedBinShard; ++candidate) {
            bool expected = false;
            if (!g_shard_owned[candidate].load(std::memory_order_relaxed) &&
                g_shard_owned[candidate].compare_exchange_strong(expected, true, std::memory_order_acquire)) {
                if (!back_bin_shards(candidate + 1)) {  // no room in /dev/shm: the shared shard
                    g_shard_owned[candidate].store(false, std::memory_order_release);
                    break;
                }
                shard = candidate;
                uint32_t claimed_ever = g_shards_claimed_ever.load(std::memory_order_relaxed);
                while (claimed_ever <= shard &&
                       !g_shards_claimed_ever.compare_exchange_weak(claimed_ever, shard + 1, std::memory_order_release,
                                                                    std::memory_order_relaxed)) {
                }
                break;
            }
        }
    }
    t_thread.bin_shard = shard + 1;
    if (shard != kSharedBinShard) {
        GuardScope guard;  // pthread_setspecific may allocate its second-level array
        if (pthread_setspecific(g_shard_key, reinterpret_cast<void*>(uintptr_t{shard} + 1)) != 0) {
            g_shard_owned[shard].store(false, std::memory_order_release);
            t_thread.bin_shard = kSharedBinShard + 1;
        }
    }
    return t_thread.bin_shard;
}

void reset_bin_shards_after_fork() {
    // Only the forking thread exists in the child: every other shard is free again.
    uint32_t mine = t_thread.bin_shard;
    for (uint32_t shard = 0; shard < kSharedBinShard; ++shard)
        g_shard_owned[shard].store(shard + 1 == mine, std::memory_order_relaxed);
}

uint32_t bin_shards_in_use() { return g_shards_claimed_ever.load(std::memory_order_acquire); }

layout::BlockTotals counted_block_totals() {
    layout::BlockTotals totals{};
    for_each_bin_shard_in_use([&](uint32_t shard) {
        for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class) {
            layout::BinCounters& bin = g_segment.bins[layout::bin_index(size_class, shard)];
            const auto load = [](uint64_t& counter) {
                return std::atomic_ref<uint64_t>(counter).load(std::memory_order_relaxed);
            };
            totals.allocs += load(bin.allocs);
            totals.frees += load(bin.frees);
            totals.alloc_bytes += load(bin.alloc_bytes);
            totals.free_bytes += load(bin.free_bytes);
        }
    });
    return totals;
}

}  // namespace leakwrap
