// Call sites: the native stack of an allocation (with its Ruby file:line, if any, and the size
// class of the block), looked up in a liburcu lock-free hash table
// (cds_lfht, urcu-bp flavor: no thread registration needed) whose nodes point at site records
// in the shared segment, where the counters live.
#pragma once

#include <atomic>
#include <cstdint>

#include "caller.h"
#include "segment.h"

namespace leakwrap {

// Creates the (process-private) hash table for the current segment's capacity.
bool init_site_table();

// Site index for a block of `size` bytes allocated by `caller` on the calling thread's stack;
// inserts a new site when first seen, or returns the overflow site once the table is full.
uint32_t site_for_allocation(uint64_t size, const CallerContext& caller);

// Counter updates: one relaxed atomic add per field, on the site's own cache line. The frees
// side uses release so that a reader loading frees before allocs (acquire) never sees more
// frees than allocations.
inline void count_allocation(uint32_t site, uint64_t bytes) {
    layout::SiteRecord* r = site_record(site);
    std::atomic_ref<uint64_t>(r->alloc_bytes).fetch_add(bytes, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(r->allocs).fetch_add(1, std::memory_order_release);
}

inline void count_free(uint32_t site, uint64_t bytes) {
    layout::SiteRecord* r = site_record(site);
    std::atomic_ref<uint64_t>(r->free_bytes).fetch_add(bytes, std::memory_order_release);
    std::atomic_ref<uint64_t>(r->frees).fetch_add(1, std::memory_order_release);
}

}  // namespace leakwrap
