// The counters of call sites. A thread that owns a bin shard counts into that shard's SiteDelta
// entries (see segment_layout.h) with plain stores, so threads allocating from one site never
// fight over the cache line of its record, and no count needs a locked instruction while the
// thread keeps allocating from the same few sites. An entry is direct-mapped by site index;
// when another site needs it, its counts move into their record with atomic adds. Threads
// beyond the owned shards add to the records directly.
//
// Safe inside malloc: only loads and stores to the segment, which is mapped and backed for the
// process's lifetime; no lock, no allocation.
#pragma once

#include <atomic>
#include <cstdint>

#include "bins.h"
#include "debug_check.h"
#include "segment.h"

namespace leakwrap {

inline constexpr uint32_t kSiteDeltaSlots = 256;  // per shard: 10 KiB

// Moves what `delta` holds into its site's record and gives the entry to `site` (out of line:
// the common case is a thread that keeps hitting the same sites). False, moving nothing, while a
// fork snapshot is being copied: the caller then counts in the record itself.
bool retarget_site_delta(layout::SiteDelta* delta, uint32_t site);

// Around fork's copy of the segment. A move of counts from an entry into a record that ran
// while the copy is taken would be copied twice (the entry copied before the move, the record
// after it) or not at all; so no move starts while the copy is taken, and the copy waits for
// the moves already running (a few instructions each; bounded, so that it never hangs).
void hold_site_delta_moves();
void release_site_delta_moves();

// After fork, in the child's only thread: every entry's counts into the records of the first
// `sites` sites, so that the records alone are the whole count. An entry naming a later site
// (claimed by another thread of the parent while the snapshot was copied) is dropped: that
// slot's record was not copied.
void move_all_site_deltas_to_records(uint64_t sites);

// The calling thread's entry for `site`, or nullptr if the thread shares the last shard.
inline layout::SiteDelta* own_site_delta(uint32_t site) {
    uint32_t shard = current_bin_shard();
    if (__builtin_expect(shard == kSharedBinShard, 0)) return nullptr;
    layout::SiteDelta* delta = g_segment.site_deltas + shard * kSiteDeltaSlots + (site & (kSiteDeltaSlots - 1));
    if (__builtin_expect(delta->site != site, 0) && !retarget_site_delta(delta, site)) return nullptr;
    return delta;
}

// Shared-shard threads add to the record. The frees side uses release so that a reader
// loading frees before allocs (acquire) sees no more frees than allocations (R12).
inline void count_allocation(uint32_t site, uint64_t bytes) {
    LEAKWRAP_CHECK(site < g_segment.site_capacity);
    if (layout::SiteDelta* delta = own_site_delta(site)) {
        add_to_counter(delta->alloc_bytes, bytes, true);
        add_to_counter(delta->allocs, 1, true);
        return;
    }
    layout::SiteRecord* r = site_record(site);
    std::atomic_ref<uint64_t>(r->alloc_bytes).fetch_add(bytes, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(r->allocs).fetch_add(1, std::memory_order_release);
}

inline void count_free(uint32_t site, uint64_t bytes) {
    LEAKWRAP_CHECK(site < g_segment.site_capacity);
    if (layout::SiteDelta* delta = own_site_delta(site)) {
        add_to_counter(delta->free_bytes, bytes, true);
        add_to_counter(delta->frees, 1, true);
        return;
    }
    layout::SiteRecord* r = site_record(site);
    std::atomic_ref<uint64_t>(r->free_bytes).fetch_add(bytes, std::memory_order_release);
    std::atomic_ref<uint64_t>(r->frees).fetch_add(1, std::memory_order_release);
}

}  // namespace leakwrap
