// `leakwrap-report suspects`: which sites of a series grow the way a leak grows. Each site's live
// bytes over time are fitted with a straight line (least squares), and the fit, the share of
// steps that did not go down and the growth over the last third of the series decide its class.
#pragma once

#include "series.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class Trend {
    leak,     // grows steadily and is still growing at the end
    plateau,  // grew, then stayed flat over the last third: a cache or pool that filled up
    churn,    // rises and falls without a steady trend
    flat,     // never changed
};

std::string_view trend_name(Trend trend);  // "leak", "plateau", "churn", "flat"

// The thresholds of the classes, in --help and the README.
inline constexpr std::size_t kMinSamplesForTrends = 3;
inline constexpr double kLeakMinRSquared = 0.8;
inline constexpr double kLeakMinRisingShare = 0.8;
// A leak's slope over the last third of the series is at least this share of its overall slope.
inline constexpr double kStillGrowingShare = 0.25;
// A plateau's live bytes vary by at most this share of their whole range over the last third.
inline constexpr double kPlateauMaxRecentSpread = 0.1;

struct Suspect {
    uint64_t id = 0;
    std::string label;
    Trend trend = Trend::flat;
    double slope_bytes_per_hour = 0;         // least squares over the whole series
    double r_squared = 0;                    // of that fit; 1 for a site that never changed
    double rising_share = 0;                 // steps from one sample to the next that did not go down
    double recent_slope_bytes_per_hour = 0;  // least squares over the last third
    double first_live_bytes = 0;
    double last_live_bytes = 0;
};

// Every site of the series: leaks first, then plateaus, churn and flat sites, each class by
// slope, steepest first. Throws std::runtime_error for fewer than kMinSamplesForTrends samples.
std::vector<Suspect> rank_suspects(const std::vector<Sample>& series);

}  // namespace leakwrap
