// Call sites: a stack (stack_table.h), the size class of its blocks and the birth cell they were
// allocated in. A site record in the shared segment holds the counters (site_counters.h) and its
// stack's reference; it is found from its stack, whose sites form a process-private chain.
#pragma once

#include <cstdint>

#include "segment.h"
#include "stack_table.h"

namespace leakwrap {

// What tells the sites of one stack apart (R9).
struct SiteKind {
    uint32_t size_class;
    uint32_t birth_cell;
};

// Creates the (process-private) indexes of sites and stacks for the current segment.
bool init_site_table();

// The site of `kind` of a stack, added with its stack when new; when the tables are nearly full,
// a new stack is recorded reduced (its innermost frames), and when they are full, or /dev/shm
// is, the allocation goes to the overflow site of its size class. Called with the guard held,
// inside no RCU read-side section (it takes one).
uint32_t site_for_stack(const StackKey& key, uint64_t hash, SiteKind kind);

}  // namespace leakwrap
