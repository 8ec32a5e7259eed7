// LEAKWRAP_* environment settings, read once at start-up. Garbage values are reported with a
// one-line warning and replaced by the default: a typo must never stop the host program.
#pragma once

#include <cstdint>

namespace leakwrap {

struct Config {
    uint32_t depth = 16;          // LEAKWRAP_DEPTH: native frames kept per stack (1..64)
    uint32_t ruby_depth = 8;      // LEAKWRAP_RUBY_DEPTH: Ruby frames kept per stack (0..64)
    // LEAKWRAP_MAX_SITES: site table capacity, overflow sites included. Only what is used is
    // backed, so the default is far above what a large Rails app's boot needs.
    uint32_t max_sites = 1u << 24;
    uint64_t sample_interval = 0; // LEAKWRAP_SAMPLE: mean bytes between sampled allocations, 0 = exact
    bool keep = false;            // LEAKWRAP_KEEP=1: keep the segment after a normal exit
    bool disable = false;         // LEAKWRAP_DISABLE=1: pass-through, no segment
};

Config read_config();

}  // namespace leakwrap
