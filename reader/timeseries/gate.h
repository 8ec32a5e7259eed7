// `suspects --fail-on`: a soak test's verdict for CI. The checks named fail when the series shows
// what they name, each failure a line that says which row or total and by how much.
#pragma once

#include "series.h"
#include "suspects.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class GateCheck {
    leak,    // a site classed leak
    growth,  // the total live bytes grew by more than max_growth from the first to the last sample
    rss,     // the RSS grew outside every call site (memory_growth.h)
};

inline constexpr std::string_view kGateCheckNames[] = {"leak", "growth", "rss"};
inline constexpr uint64_t kDefaultMaxGrowth = 1024 * 1024;

struct GateOptions {
    std::vector<GateCheck> checks;
    uint64_t max_growth = kDefaultMaxGrowth;
};

// One line per finding, for people and CI logs; none when the series passes. Throws
// std::runtime_error for a check the series cannot answer (rss without RSS).
std::vector<std::string> gate_failures(const std::vector<Sample>& series, const SuspectRanking& ranking,
                                       const GateOptions& options);

}  // namespace leakwrap
