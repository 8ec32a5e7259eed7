// Call sites: a stack (stack_table.h) and the size class of its blocks. A site record in the
// shared segment holds the counters (site_counters.h) and its stack's reference; it is found
// from its stack, whose sites form a process-private chain.
#pragma once

#include <cstdint>

#include "caller.h"
#include "segment.h"

namespace leakwrap {

// Creates the (process-private) indexes of sites and stacks for the current segment.
bool init_site_table();

// Site index for a block of size class `size_class` (layout::size_class_of() of its size, which
// the caller has already counted in its bin) allocated by `caller` on the calling thread's stack;
// inserts a new site when first seen. Called with the guard held.
uint32_t site_for_allocation(uint32_t size_class, const CallerContext& caller);

}  // namespace leakwrap
