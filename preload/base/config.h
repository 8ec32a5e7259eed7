// LEAKWRAP_* environment settings, read once at start-up. Garbage values are reported with a
// one-line warning and replaced by the default: a typo must never stop the host program.
#pragma once

#include <cstdint>

namespace leakwrap {

inline constexpr uint32_t kMaxKeepDead = 1024;

struct Config {
    uint32_t depth = 16;      // LEAKWRAP_DEPTH: native frames kept per stack (1..64)
    uint32_t ruby_depth = 8;  // LEAKWRAP_RUBY_DEPTH: Ruby frames kept per stack (0..64)
    // LEAKWRAP_MAX_SITES: site table capacity, overflow sites included. Only what is used is
    // backed, so the default is far above what a large Rails app's boot needs.
    uint32_t max_sites = 1u << 24;
    uint64_t sample_interval = 0;  // LEAKWRAP_SAMPLE: mean bytes between sampled allocations, 0 = exact
    bool keep = false;             // LEAKWRAP_KEEP=1: keep the segment after a normal exit
    // LEAKWRAP_KEEP_DEAD: segments of gone processes kept at start-up, the newest (0..kMaxKeepDead).
    uint32_t keep_dead = 8;
    // LEAKWRAP_KEEP_DEAD_DAYS: older ones (unchanged for this many days) go whatever their number;
    // 0: no age limit.
    uint32_t keep_dead_days = 7;
    bool disable = false;  // LEAKWRAP_DISABLE=1: pass-through, no segment
};

Config read_config();

}  // namespace leakwrap
