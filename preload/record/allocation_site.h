// Which site an allocation counts at, the per-allocation path of attribution: the caller's
// Ruby backtrace; the call-site cache (call_site_cache.h) for a call it knows; else the native
// stack, cut where the Ruby VM called in; the memo of known sites (known_sites.h); and, for a
// stack seen for the first time, the site table (site_table.h).
#pragma once

#include <cstdint>

#include "caller.h"

namespace leakwrap {

// Creates the site and stack tables and the memo of known sites for the current segment.
bool init_allocation_sites();

// Site index for a block of size class `size_class` (layout::size_class_of() of its size, which
// the caller has already counted in its bin) allocated by `caller` on the calling thread's stack;
// inserts a new site when first seen. Called with the guard held.
uint32_t site_for_allocation(uint32_t size_class, const CallerContext& caller);

}  // namespace leakwrap
