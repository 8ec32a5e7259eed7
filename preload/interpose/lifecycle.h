// Start-up, shutdown and fork of the profiler. Tracking starts in libleakwrap's constructor.
// Blocks allocated before it (by the dynamic loader and the constructors of the libraries
// leakwrap itself depends on) stay untracked, as do those of the libstdc++ linked into it (its
// exception pool): they are never the program's leaks, and starting later keeps initialisation
// out of the loader's own calls.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"

namespace leakwrap {

enum Mode : int { kUninitialized, kInitializing, kTracking, kPassThrough };

// The mode, alone on a page that a forked child gets zeroed (MADV_WIPEONFORK, asked for at
// start-up): a child made without fork's handlers (glibc's _Fork, a raw clone) reads
// kUninitialized, so it tracks nothing and counts no free in its parent's segment. The child
// handler of fork() sets it again once the child has its own segment.
struct alignas(4096) ModePage {
    std::atomic<int> mode;
};
extern constinit ModePage g_mode_page;
extern constinit uint64_t g_tag_secret;
extern constinit Config g_config;

// _exit and _Exit: programs that leave that way (shells, forked children, daemons) skip
// destructors, but their exit is just as normal, so it cleans up the same way.
[[noreturn]] void exit_now(int status);

// True when this allocation should be tracked. One load. Another thread's allocation while the
// constructor initialises is not tracked rather than made to wait: the initialising thread may
// need a lock (the loader's) that the waiting one holds.
inline bool tracking_enabled() {
    return __builtin_expect(g_mode_page.mode.load(std::memory_order_acquire) == kTracking, 1);
}

}  // namespace leakwrap
