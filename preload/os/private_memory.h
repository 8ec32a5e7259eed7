// What leakwrap's own tables hold of the process's private memory: the stack index (its nodes and
// hash tables), the sites' chains, the Ruby frame index, the frame-size table, the memo of known
// sites and each thread's call-site cache. Counted as they grow, and published in the segment
// header (Header::private_kib), so that a reader can tell leakwrap's memory from the program's in
// the anonymous part of the RSS. Tables filled in order from the start of a reservation count the
// bytes they have reached, the memo of known sites the pages it has written; tables made whole,
// or filled at random, count whole.
//
// Called on slow paths only (a new stack, site or table, a thread's first allocation), with the
// reentrancy guard held or from init; lock-free, so safe in a signal handler and across fork (a
// child's segment starts as a copy of its parent's header, count included).
#pragma once

#include <atomic>
#include <cstdint>

namespace leakwrap {

// A table of `bytes` was made, or with a negative count, unmapped.
void count_private_bytes(int64_t bytes) noexcept;

// A table filled in order from the start of its reservation now uses its first `used` bytes;
// `counted` holds how much of it is counted already.
void count_private_use(std::atomic<uint64_t>& counted, uint64_t used) noexcept;

// Writes the count into the header of the segment in use; count_private_bytes does it too.
void publish_private_bytes() noexcept;

}  // namespace leakwrap
