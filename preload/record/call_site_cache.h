// Per-thread cache of recent call sites, so that a repeated allocation skips the unwind.
//
// Where the stack cannot be walked by frame sizes, unwinding it with slots costs about a hundred
// times the fast unwind, so a key is only filled once it has led to the same site a few times
// in a row (see EntryState).
//
// An entry remembers, for a (return address, caller stack pointer, size class, birth cell), the
// site, the frames of the stack and the stack slot each return address was read from (only for
// allocations without a Ruby backtrace, see site_table.cpp). A hit requires the same caller
// address and stack pointer, and every remembered slot to hold the same return address now: frames whose canonical
// frame address follows from the stack pointer (all but those that allocate on the stack dynamically) then unwind to
// exactly the same chain, so the cached site is the one the unwind would find. Slots are only read inside the thread's
// own stack, above the current stack pointer: memory that is mapped. Unwinds through signal frames, threads running on
// other stacks (fibers, sigaltstack) and threads whose stack bounds are unknown are never cached.
#pragma once

#include <cstdint>

#include "caller.h"
#include "stack_capture.h"

namespace leakwrap {

void init_call_site_cache();

inline constexpr uint32_t kNoCachedSite = UINT32_MAX;

struct CacheLookup {
    uint32_t site;  // kNoCachedSite on a miss
    bool fill;      // a miss whose stack is worth capturing with its slots, to fill the entry
};

CacheLookup look_up_site(const CallerContext& caller, uint32_t size_class, uint32_t birth_cell);

// Fills the call's entry if the stack's slots are known and its key has repeated enough;
// otherwise only notes its key.
void remember_site(const CallerContext& caller, uint32_t size_class, uint32_t birth_cell, const CapturedStack& stack,
                   uint32_t site);

}  // namespace leakwrap
