// Everything leakwrap keeps per thread, in one initial-exec thread-local block: reading it is a
// plain %fs-relative load. The general-dynamic model could call __tls_get_addr, which may
// allocate, i.e. call malloc from inside malloc. Every field starts zero in a new thread, and
// zero means "not set up yet" to each of its owners.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

// sampler.h: the countdown of sampling mode.
struct SamplerState {
    int64_t bytes_until_sample;
    uint64_t random_state;  // 0 until the thread's first draw
};

// thread_stacks.h: the thread's own stack, which the call-site cache may read.
struct StackBounds {
    uintptr_t low;
    uintptr_t high;  // 0: unknown
};

// stack_capture.cpp: how this thread's stacks were found lately, which decides whether a walk
// that meets an unknown frame is worth reading its rule from the unwind table.
struct StackWalkCounts {
    uint64_t walked;      // stacks walked by frame sizes
    uint64_t learned;     // frames learned from the unwind tables during a walk
    uint64_t unwalkable;  // stacks with a frame that cannot be walked by size
};

// fork_snapshot.cpp: the copy of the segment this thread took for the fork it is making; the
// child that fork makes starts from it. Per thread, since forks from several threads overlap.
struct ForkSnapshot {
    std::byte* copy;  // null outside a fork
    uint64_t size;
};

struct ThreadCache;       // call_site_cache.cpp
struct ExecutionContext;  // ruby_vm_frames.cpp

struct ThreadState {
    // guard.h: > 0 while the thread runs leakwrap's own code, whose allocations go untracked.
    int inside_leakwrap;
    // bins.h: the thread's shard of the bins and site deltas, plus one; 0 until assigned.
    uint32_t bin_shard;
    SamplerState sampler;
    StackBounds stack_bounds;
    StackWalkCounts stack_walks;
    // call_site_cache.cpp: the thread's caches; null until its first tracked allocation.
    ThreadCache* call_site_cache;
    // fork_fence.h: the fenced sections the thread is inside, and whether its last fork saw
    // every other thread leave theirs (read by the child).
    uint32_t fork_fenced_sections;
    bool fork_outwaited_sections;
    ForkSnapshot fork_snapshot;
    // ruby_vm_frames.cpp: where libruby keeps this thread's execution context; null until asked.
    const ExecutionContext* const* ruby_execution_context;
};

extern __thread ThreadState t_thread __attribute__((tls_model("initial-exec")));

}  // namespace leakwrap
