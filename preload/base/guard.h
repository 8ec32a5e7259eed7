// Reentrancy guard: while a thread runs leakwrap's own code (unwinding, hashing, creating the
// segment, calling the real allocator), any malloc it triggers is leakwrap's own and must go
// straight to the real allocator, untracked, instead of recursing into the profiler (I1; a
// signal handler that allocates meanwhile is so untracked too, I4).
#pragma once

#include "thread_state.h"

namespace leakwrap {

inline bool inside_leakwrap() { return t_thread.inside_leakwrap != 0; }

class GuardScope {
public:
    GuardScope() { ++t_thread.inside_leakwrap; }
    ~GuardScope() { --t_thread.inside_leakwrap; }
    GuardScope(const GuardScope&) = delete;
    GuardScope& operator=(const GuardScope&) = delete;
};

}  // namespace leakwrap
