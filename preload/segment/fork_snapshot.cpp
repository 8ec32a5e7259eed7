#include "segment.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "bins.h"
#include "diagnostics.h"
#include "os.h"
#include "segment_internals.h"
#include "site_counters.h"
#include "thread_state.h"

namespace leakwrap {
namespace {

using layout::Header;

// The parent's other threads kept counting while its snapshot was copied, bins first and sites
// later, so the copy's bins may be ahead of its sites. In exact mode every block is counted at
// its site too, so the child's bins are rebuilt from its sites: both then describe one moment.
void rebuild_bins_from_sites(uint64_t sites) {
    for_each_bin_shard_in_use([](uint32_t shard) {
        std::memset(g_segment.bins + layout::bin_index(0, shard), 0,
                    layout::kSizeClassCount * sizeof(layout::BinCounters));
    });
    for (uint64_t index = 0; index < sites; ++index) {
        const layout::SiteRecord* site = site_record(static_cast<uint32_t>(index));
        if (site->state != layout::kReady || site->size_class >= layout::kSizeClassCount) continue;
        layout::BinCounters& bin = g_segment.bins[layout::bin_index(site->size_class, kSharedBinShard)];
        bin.allocs += site->allocs;
        bin.frees += site->frees;
        bin.alloc_bytes += site->alloc_bytes;
        bin.free_bytes += site->free_bytes;
    }
}

// Other threads go on counting and claiming while the parent copies: the copy races with their
// writes by design, and what follows it repairs what a race can tear (recopy_allocation_counts,
// and the child's clamps to what was claimed). ThreadSanitizer is told so: under it the copy is
// a word loop it does not instrument, as the reader's copy from another process is unseen by it.
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize("thread"), noinline)) void copy_racing_writers(std::byte* to, const std::byte* from,
                                                                          uint64_t length) {
    const volatile std::byte* source = from;
    for (uint64_t i = 0; i < length; ++i) to[i] = source[i];
}
#else
void copy_racing_writers(std::byte* to, const std::byte* from, uint64_t length) { std::memcpy(to, from, length); }
#endif

// Calls copy(offset, length) for each range of the segment before its site records that may hold
// anything: the header, and the bins and site deltas of the shards in use (bins.h).
template <typename Copy>
void for_each_counter_range(const Header* h, Copy copy) {
    copy(0, sizeof(Header));
    for_each_bin_shard_in_use([&](uint32_t shard) {
        copy(h->bins_offset + shard * kShardBinBytes, kShardBinBytes);
        copy(h->site_deltas_offset + shard * kShardDeltaBytes, kShardDeltaBytes);
    });
}

// Threads go on counting while the snapshot is copied, and a copy taken word by word can catch
// an allocation and its free between reading a counter's allocations and its frees: more frees
// than allocations. Reading the allocation side once more afterwards gives a cut in which every
// free copied has its allocation copied too (a block is counted allocated before it is freed).
// Sites, site deltas and bins all keep allocs at +0 and alloc_bytes at +16 of their counters.
void recopy_allocation_counts(std::byte* snapshot, uint64_t sites) {
    auto recopy = [snapshot](uint64_t* live) {
        auto* copy = reinterpret_cast<uint64_t*>(snapshot + (reinterpret_cast<std::byte*>(live) - g_segment.base));
        copy[0] = std::atomic_ref<uint64_t>(live[0]).load(std::memory_order_acquire);
        copy[2] = std::atomic_ref<uint64_t>(live[2]).load(std::memory_order_acquire);
    };
    static_assert(offsetof(layout::SiteRecord, alloc_bytes) - offsetof(layout::SiteRecord, allocs) == 16);
    static_assert(offsetof(layout::SiteDelta, alloc_bytes) - offsetof(layout::SiteDelta, allocs) == 16);
    static_assert(offsetof(layout::BinCounters, alloc_bytes) - offsetof(layout::BinCounters, allocs) == 16);
    for (uint64_t index = 0; index < sites; ++index) recopy(&site_record(static_cast<uint32_t>(index))->allocs);
    for_each_bin_shard_in_use([&](uint32_t shard) {
        for (uint32_t slot = 0; slot < kSiteDeltaSlots; ++slot)
            recopy(&g_segment.site_deltas[shard * kSiteDeltaSlots + slot].allocs);
        for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class)
            recopy(&g_segment.bins[layout::bin_index(size_class, shard)].allocs);
    });
}

}  // namespace

void snapshot_segment_for_fork() {
    Header* h = g_segment.header;
    if (h == nullptr) return;
    void* copy = os::reserve_private(h->segment_size);
    if (copy == nullptr) return;
    auto* snapshot = static_cast<std::byte*>(copy);
    t_thread.fork_snapshot = ForkSnapshot{snapshot, h->segment_size};
    // Only backed pages are read: a slot claimed when /dev/shm had no room left was never
    // backed, and touching it would raise SIGBUS in the host.
    auto copy_range = [&](uint64_t offset, uint64_t length) {
        uint64_t backed = backed_until(offset);
        // The header and the shared shard were backed at creation, a shard in use at its claim.
        if (offset < h->sites_offset) backed = h->sites_offset;
        uint64_t end = std::min(offset + length, backed);
        if (end > offset) copy_racing_writers(snapshot + offset, g_segment.base + offset, end - offset);
    };
    auto claimed = [](auto& mark) { return std::atomic_ref(mark).load(std::memory_order_acquire); };
    uint64_t sites = std::min<uint64_t>(claimed(h->sites_claimed), h->site_capacity);
    uint64_t modules = std::min<uint64_t>(claimed(h->modules_claimed), h->module_capacity);
    hold_site_delta_moves();  // I3: fork's bounded wait, for moves a few atomic adds long
    for_each_counter_range(h, copy_range);
    copy_range(h->sites_offset, sites * sizeof(layout::SiteRecord));
    recopy_allocation_counts(snapshot, sites);
    release_site_delta_moves();
    copy_range(h->stacks_offset, std::min(claimed(h->stacks_used), h->stacks_capacity));
    copy_range(h->modules_offset, modules * h->module_record_size);
    copy_range(h->strings_offset, std::min(claimed(h->strings_used), h->strings_capacity));
}

void discard_fork_snapshot() {
    ForkSnapshot& own = t_thread.fork_snapshot;
    if (own.copy != nullptr) os::unmap(own.copy, own.size);
    own = ForkSnapshot{};
}

bool adopt_fork_snapshot_in_child(const Config& config) {
    const std::byte* snapshot = t_thread.fork_snapshot.copy;
    if (snapshot == nullptr) return false;
    int parent_pid = g_segment.header->pid;
    Geometry g = geometry_for(config);
    Header* h = map_new_segment(config, g);
    if (h == nullptr) {
        g_segment = SegmentView{};
        discard_fork_snapshot();
        return false;
    }
    const auto* parent = reinterpret_cast<const Header*>(snapshot);
    uint64_t sites = std::min<uint64_t>(parent->sites_claimed, parent->site_capacity);
    uint64_t modules = std::min<uint64_t>(parent->modules_claimed, parent->module_capacity);
    uint64_t strings = std::min(parent->strings_used, parent->strings_capacity);
    uint64_t stacks = std::min(parent->stacks_used, parent->stacks_capacity);
    const uint32_t shards_in_use = std::min(bin_shards_in_use(), kSharedBinShard);
    bool reserved = back_bin_shards(shards_in_use) &&
                    reserve_segment_bytes(g.sites_offset, sites * sizeof(layout::SiteRecord)) &&
                    (stacks == 0 || reserve_segment_bytes(g.stacks_offset, stacks)) &&
                    (modules == 0 || reserve_segment_bytes(g.modules_offset, modules * sizeof(layout::ModuleRecord))) &&
                    (strings == 0 || reserve_segment_bytes(g.strings_offset, strings));
    if (!reserved) {
        warn("no space in /dev/shm for the forked child's segment; the child is not profiled");
        unlink_segment();
        g_segment = SegmentView{};
        discard_fork_snapshot();
        return false;
    }
    for_each_counter_range(parent, [snapshot](uint64_t offset, uint64_t length) {
        std::memcpy(g_segment.base + offset, snapshot + offset, length);
    });
    h->bin_shards_backed = shards_in_use;  // the parent's, copied with its header, may be more
    std::memcpy(g_segment.base + g.sites_offset, snapshot + g.sites_offset, sites * sizeof(layout::SiteRecord));
    std::memcpy(g_segment.base + g.stacks_offset, snapshot + g.stacks_offset, stacks);
    std::memcpy(g_segment.base + g.modules_offset, snapshot + g.modules_offset, modules * sizeof(layout::ModuleRecord));
    std::memcpy(g_segment.base + g.strings_offset, snapshot + g.strings_offset, strings);
    discard_fork_snapshot();
    move_all_site_deltas_to_records(sites);
    if (h->sample_interval == 0) rebuild_bins_from_sites(sites);
    h->state = layout::kEmpty;
    h->process_state = layout::kProcessRunning;
    fill_identity(h, parent_pid);
    publish(h);
    return true;
}

}  // namespace leakwrap
