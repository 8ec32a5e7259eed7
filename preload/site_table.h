// Call sites: the native stack of an allocation (with its Ruby file:line, if any, and the size
// class of the block), looked up in a liburcu lock-free hash table
// (cds_lfht, urcu-bp flavor: no thread registration needed) whose nodes point at site records
// in the shared segment (their counters: site_counters.h).
#pragma once

#include <cstdint>

#include "caller.h"
#include "segment.h"

namespace leakwrap {

// Creates the (process-private) hash table for the current segment's capacity.
bool init_site_table();

// Site index for a block of `size` bytes allocated by `caller` on the calling thread's stack;
// inserts a new site when first seen, or returns the overflow site once the table is full.
uint32_t site_for_allocation(uint64_t size, const CallerContext& caller);

}  // namespace leakwrap
