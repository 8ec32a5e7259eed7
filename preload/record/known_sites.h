// The process's memo of the sites of the stacks it has met, by a 64-bit hash of (native frames,
// Ruby backtrace, size class): a stack that the call-site cache cannot vouch for (an
// interpreter's, whose Ruby backtrace keeps changing under one C caller) is still captured, but
// found without the shared indexes of the site table.
//
// One memo for all threads, not one each: the threads of a server run the same code, so what
// one thread met, the others find, and a process of many threads pays for one table. Lock-free:
// each entry is one word, read and written whole, so a thread may lose an entry to another's
// write (a miss, then found in the site table) but never reads half of one. Touched as used.
#pragma once

#include <cstdint>

namespace leakwrap {

inline constexpr uint32_t kUnknownSite = UINT32_MAX;

// Once, while the site table is made: false if its memory cannot be reserved.
bool init_known_sites();

// The site remembered for the key, or kUnknownSite. An entry keeps 38 bits of the hash besides
// the 15 that place it, so a stack not met before is taken for one that was, at each look-up,
// with odds of 2^-38.
uint32_t known_site(uint64_t key_hash);
void remember_known_site(uint64_t key_hash, uint32_t site);

}  // namespace leakwrap
