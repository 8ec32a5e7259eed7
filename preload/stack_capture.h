// Native call stack of the allocating thread, via libunwind.
#pragma once

#include <cstdint>

namespace leakwrap {

// Once, during initialisation: libunwind's per-thread caches, and the address range of
// libleakwrap.so itself, whose frames are left out of every stack.
void init_stack_capture();

// Fills `frames` with up to max_depth return addresses, innermost first, starting at the
// function that called malloc (leakwrap's own frames skipped). Returns the number kept.
uint32_t capture_stack(uint64_t* frames, uint32_t max_depth);

// The hash the site table is keyed by.
inline uint64_t hash_stack(const uint64_t* frames, uint32_t depth) {
    uint64_t h = 0x243F6A8885A308D3ull ^ depth;
    for (uint32_t i = 0; i < depth; ++i) {
        h ^= frames[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

}  // namespace leakwrap
