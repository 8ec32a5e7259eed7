// LEAKWRAP_* environment settings, read once at start-up. Garbage values are reported with a
// one-line warning and replaced by the default: a typo must never stop the host program.
#pragma once

#include <cstdint>

namespace leakwrap {

struct Config {
    uint32_t depth = 16;          // LEAKWRAP_DEPTH: frames kept per call site (1..64)
    uint32_t max_sites = 262144;  // LEAKWRAP_MAX_SITES: site table capacity, overflow sites included
    uint64_t sample_interval = 0; // LEAKWRAP_SAMPLE: mean bytes between sampled allocations, 0 = exact
    bool keep = false;            // LEAKWRAP_KEEP=1: keep the segment after a normal exit
    bool disable = false;         // LEAKWRAP_DISABLE=1: pass-through, no segment
};

Config read_config();

}  // namespace leakwrap
