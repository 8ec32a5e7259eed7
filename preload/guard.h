// Reentrancy guard: while a thread runs leakwrap's own code (unwinding, hashing, creating the
// segment, calling the real allocator), any malloc it triggers is leakwrap's own and must go
// straight to the real allocator, untracked, instead of recursing into the profiler.
#pragma once

namespace leakwrap {

// initial-exec TLS: reading it is a plain %fs-relative load. The general-dynamic model could call
// __tls_get_addr, which may allocate, i.e. call malloc from inside malloc.
extern __thread int t_inside_leakwrap __attribute__((tls_model("initial-exec")));

inline bool inside_leakwrap() { return t_inside_leakwrap != 0; }

class GuardScope {
public:
    GuardScope() { ++t_inside_leakwrap; }
    ~GuardScope() { --t_inside_leakwrap; }
    GuardScope(const GuardScope&) = delete;
    GuardScope& operator=(const GuardScope&) = delete;
};

}  // namespace leakwrap
