// `leakwrap-report suspects`: which sites of a series grow the way a leak grows. The clock is the
// process's own work, its allocations since the first sample, so an idle stretch neither hides a
// leak nor makes it look like a plateau; each site's live bytes are fitted against that clock
// (least squares), and its frees and falls tell a leak from memory that is given back in bursts
// (a garbage collector, a pool).
#pragma once

#include "series.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class Trend {
    leak,  // keeps allocating and (almost) never frees: grows with the work to the end
    // Keeps growing with the work while freeing part of what it allocates: a leak of some of
    // its blocks, or garbage that a collector has not reached within the series.
    growing,
    plateau,  // grew, then held over the last third of the work: a cache filled, a warm-up
    churn,    // gives back in bursts (rises and falls back), shrank, or changed without a trend
    flat,     // never changed
};

std::string_view trend_name(Trend trend);  // "leak", "growing", "plateau", "churn", "flat"

// The thresholds of the classes, in classification_rules() and the README.
inline constexpr std::size_t kMinSamplesForTrends = 3;
// Live bytes that fall by more than this share of their range between two samples were given
// back, however the frees say it happened.
inline constexpr double kGivenBackFallShare = 0.2;
// A leak's growth per allocation over the last third of the work is at least this share of its
// growth over the whole series.
inline constexpr double kStillGrowingShare = 0.25;
// A leak keeps at least this share of what it allocated during the series.
inline constexpr double kNeverFreesRetainedShare = 0.95;
// A growing site's live bytes follow a straight line over the work at least this well.
inline constexpr double kGrowingMinRSquared = 0.8;
// A plateau's live bytes vary by at most this share of their whole range over the last third.
inline constexpr double kPlateauMaxRecentSpread = 0.1;

// What a site allocated and freed between the first and the last sample that have it, and the
// share of those allocations still live: none when it allocated nothing there.
struct SiteRetention {
    uint64_t allocs = 0;
    uint64_t frees = 0;
    std::optional<double> retained_share;
};

// How a site's frees answered its allocations from one sample to the next.
enum class GiveBack {
    never,      // every step that allocated grew: a leak's signature
    steadily,   // some steps freed as many blocks as they allocated: a full cache evicting
    in_bursts,  // some step freed more than it allocated, or the live bytes fell: a GC, a pool
};

std::string_view give_back_name(GiveBack give_back);  // "never", "steadily", "in bursts"

struct Suspect {
    uint64_t id = 0;
    std::string label;
    Trend trend = Trend::flat;
    // Least squares of live bytes over the process's allocations, per million of them.
    double growth_per_million_allocs = 0;
    double r_squared = 0;                         // of that fit; 1 for a site that never changed
    double recent_growth_per_million_allocs = 0;  // the same over the last third of the work
    double growth_per_hour = 0;                   // least squares over time
    SiteRetention retention;
    GiveBack give_back = GiveBack::never;
    double first_live_bytes = 0;
    double last_live_bytes = 0;
};

struct SuspectRanking {
    uint64_t process_allocs = 0;  // the work the series saw: allocations from first to last sample
    // Every site of the series: leaks first, then growing, plateau, churn and flat sites, each class by
    // growth per allocation, steepest first.
    std::vector<Suspect> suspects;
};

// Throws std::runtime_error for fewer than kMinSamplesForTrends samples.
SuspectRanking rank_suspects(const std::vector<Sample>& series);

// What the classes mean, in one paragraph for people (text and HTML output).
std::string classification_rules();

}  // namespace leakwrap
