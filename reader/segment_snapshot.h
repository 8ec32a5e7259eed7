// A parsed, self-contained copy of one leakwrap segment: everything the reports need, with no
// reference back to the bytes it came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace leakwrap {

// The bytes are not a segment this reader can trust: the message names the first problem found.
class SegmentError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Module {
    std::string path;
    uint64_t load_bias = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    uint32_t load_generation = 0;
    uint32_t unload_generation = 0;
    std::vector<uint8_t> build_id;
};

struct Site {
    uint32_t id = 0;  // slot index in the site table
    bool overflow = false;
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;
    uint64_t live_blocks = 0;
    uint64_t live_bytes = 0;
    uint32_t module_generation = 0;
    std::vector<uint64_t> frames;  // return addresses, innermost first
};

// Sums over every site, the overflow site included, so they are exact even when a report
// prints only the top few sites.
struct Totals {
    uint64_t live_bytes = 0;
    uint64_t live_blocks = 0;
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;
};

struct Snapshot {
    int32_t pid = 0;
    int32_t parent_pid = 0;
    uint64_t start_time_ticks = 0;
    uint64_t created_unix_ns = 0;
    std::string boot_id;
    std::string exe;
    std::string command_line;
    uint32_t max_depth = 0;
    uint32_t site_capacity = 0;
    uint32_t sites_claimed = 0;  // as recorded; may exceed site_capacity
    uint64_t lost_sites = 0;
    uint32_t process_state = 0;
    std::vector<Module> modules;
    std::vector<Site> sites;
    Totals totals;
};

// Parses a private copy of a segment. Every offset, size and count is checked against the bytes
// before use; anything inconsistent throws SegmentError.
Snapshot parse_segment(std::span<const std::byte> bytes);

}  // namespace leakwrap
