// The stack table: every distinct stack (native return addresses and a Ruby backtrace) stored
// once in the segment, so that the sites of its size classes, and the reader, share it. Found through a
// HashIndex whose nodes are process-private (they hold pointers).
#pragma once

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

struct StackKey {
    const uint64_t* frames;  // innermost first
    uint32_t native_depth;
    uint32_t ruby;        // the Ruby backtrace's innermost frame record (ruby_frame_tree.h)
    uint32_t ruby_depth;  // 0 with layout::kNoRubyFrame
    uint32_t flags;       // layout::kStackReduced
};

uint64_t hash_stack_key(const StackKey& key);

// For the current segment; `max_stacks` bounds the private nodes.
bool init_stack_table(uint32_t max_stacks);

// A stack found or added: its record's reference (layout::kNoStack when it is not there or the
// table is full), the head of the chain of its sites (site_table.cpp: the first site's index,
// 0 for none, since site 0 is an overflow site, which no stack has), and whether this call
// added it (a new stack has no site yet).
struct FoundStack {
    uint32_t reference;
    uint32_t* first_site;  // process-private; null with kNoStack
    bool added;
};

// The key's stack, added if new and `may_add`. Called inside an urcu-bp read-side critical
// section, with the guard held.
FoundStack find_or_add_stack(const StackKey& key, uint64_t hash, bool may_add);

// Past this, new stacks are recorded reduced (see site_table.cpp): the last sixteenth of the
// table is kept for them.
bool stack_table_nearly_full();

// The rule both tables apply: `used` has entered the last sixteenth of `capacity`, kept for
// reduced stacks.
constexpr bool in_reduced_reserve(uint64_t used, uint64_t capacity) { return used > capacity - capacity / 16; }

}  // namespace leakwrap
