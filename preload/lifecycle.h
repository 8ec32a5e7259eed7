// Start-up, shutdown and fork of the profiler. Initialisation happens on the first allocation
// (or in the library constructor, whichever comes first), so that allocations made by other
// libraries' constructors are already tracked.
#pragma once

#include <atomic>
#include <cstdint>

#include "config.h"

namespace leakwrap {

enum Mode : int { kUninitialized, kInitializing, kTracking, kPassThrough };

extern constinit std::atomic<int> g_mode;
extern constinit uint64_t g_tag_secret;
extern constinit Config g_config;

bool initialize_slow();

// True when this allocation should be tracked. One relaxed load once running.
inline bool tracking_enabled() {
    int mode = g_mode.load(std::memory_order_acquire);
    if (__builtin_expect(mode == kTracking, 1)) return true;
    if (mode == kPassThrough) return false;
    return initialize_slow();
}

}  // namespace leakwrap
