// A series turned around: for each site and each size class, its counters at every sample.
#pragma once

#include "series.h"

#include <cstdint>
#include <string>
#include <vector>

namespace leakwrap {

struct SiteHistory {
    uint64_t id = 0;
    std::string label;  // as in the latest sample that has the site
    // One value per sample. A sample without the site (it held less than --min-bytes then) counts
    // as 0: the most the site can have held is just under the threshold, so trends stay right.
    std::vector<double> live_bytes;
    // The site's cumulative allocations and frees, one per sample; only where `present` says the
    // sample has the site, since a count cannot be guessed the way a small live size can.
    std::vector<double> allocs;
    std::vector<double> frees;
    std::vector<bool> present;
};

struct BinHistory {
    uint32_t size_class = 0;
    std::vector<double> live_bytes;  // one per sample; 0 before the class's first allocation
};

// Seconds since the first sample, one per sample.
std::vector<double> seconds_since_start(const std::vector<Sample>& series);

// The process's allocations since the first sample, one per sample: the clock of its work, which
// stands still while it idles.
std::vector<double> allocations_since_start(const std::vector<Sample>& series);

// Sites by id (one process), ascending.
std::vector<SiteHistory> site_histories(const std::vector<Sample>& series);

// Size classes, ascending.
std::vector<BinHistory> bin_histories(const std::vector<Sample>& series);

}  // namespace leakwrap
