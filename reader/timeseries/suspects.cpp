#include "suspects.h"

#include "series_history.h"

#include <algorithm>
#include <array>
#include <span>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace leakwrap {
namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kMillion = 1e6;

struct LineFit {
    double slope = 0;
    double r_squared = 1;
};

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
    const double n = static_cast<double>(x.size());
    // Sums first: the mean of a constant must be that constant exactly, or a site that never
    // changed would get a variation of rounding errors and an R2 of 0.
    double mean_x = 0, mean_y = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        mean_x += x[i];
        mean_y += y[i];
    }
    mean_x /= n;
    mean_y /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxx += (x[i] - mean_x) * (x[i] - mean_x);
        sxy += (x[i] - mean_x) * (y[i] - mean_y);
        syy += (y[i] - mean_y) * (y[i] - mean_y);
    }
    LineFit fit;
    if (sxx > 0) fit.slope = sxy / sxx;
    // The share of the variation that the line explains; a constant is fitted exactly.
    if (syy > 0) fit.r_squared = sxx > 0 ? (sxy * sxy) / (sxx * syy) : 0;
    return fit;
}

double spread(std::span<const double> values) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    return *high - *low;
}

// Steps between two samples that both have the site tell by its counts; a step to or from a
// sample without it (under --min-bytes there) only by a fall of its live bytes.
GiveBack give_back_of(const SiteHistory& history, double whole_spread) {
    GiveBack give_back = GiveBack::never;
    for (std::size_t i = 1; i < history.live_bytes.size(); ++i) {
        if (history.live_bytes[i - 1] - history.live_bytes[i] > kGivenBackFallShare * whole_spread)
            return GiveBack::in_bursts;
        if (!history.present[i - 1] || !history.present[i]) continue;
        const double allocated = history.allocs[i] - history.allocs[i - 1];
        const double freed = history.frees[i] - history.frees[i - 1];
        if (freed > allocated) return GiveBack::in_bursts;
        if (freed > 0 && freed == allocated) give_back = GiveBack::steadily;
    }
    return give_back;
}

// The last third of the work starts at the last sample taken before two thirds of it were done,
// so that it spans a third of the allocations even when they came in one burst; it holds at
// least the last two samples.
std::size_t recent_work_start(const std::vector<double>& work) {
    const double two_thirds = 2 * work.back() / 3;
    std::size_t start = 0;
    while (start + 1 < work.size() && work[start + 1] <= two_thirds) ++start;
    return std::min(start, work.size() - 2);
}

SiteRetention retention_of(const SiteHistory& history) {
    const auto first = std::find(history.present.begin(), history.present.end(), true);
    const auto last = std::find(history.present.rbegin(), history.present.rend(), true);
    const auto from = static_cast<std::size_t>(first - history.present.begin());
    const auto to = history.present.size() - 1 - static_cast<std::size_t>(last - history.present.rbegin());
    const auto delta = [&](const std::vector<double>& counts) {
        return static_cast<uint64_t>(std::max(0.0, counts[to] - counts[from]));
    };
    SiteRetention retention;
    retention.allocs = delta(history.allocs);
    retention.frees = delta(history.frees);
    if (retention.allocs > 0)
        retention.retained_share = static_cast<double>(retention.allocs - std::min(retention.frees, retention.allocs)) /
                                   static_cast<double>(retention.allocs);
    return retention;
}

Trend classify(const Suspect& suspect, double whole_spread, double recent_spread, bool worked) {
    if (whole_spread == 0) return Trend::flat;
    if (!worked) return Trend::churn;  // it changed, but not through allocating
    const bool grew = suspect.last_live_bytes > suspect.first_live_bytes && suspect.growth_per_million_allocs > 0;
    const bool still_growing =
        suspect.recent_growth_per_million_allocs >= kStillGrowingShare * suspect.growth_per_million_allocs;
    const bool never_frees = suspect.retention.retained_share.value_or(0) >= kNeverFreesRetainedShare;
    if (grew && still_growing && suspect.give_back != GiveBack::in_bursts) {
        if (never_frees && suspect.give_back == GiveBack::never) return Trend::leak;
        // A site seen allocating in the series, not one that crossed --min-bytes with a block.
        if (suspect.retention.retained_share && suspect.r_squared >= kGrowingMinRSquared) return Trend::growing;
    }
    if (grew && suspect.give_back != GiveBack::in_bursts && recent_spread <= kPlateauMaxRecentSpread * whole_spread)
        return Trend::plateau;
    return Trend::churn;
}

}  // namespace

// Both enums count from 0 in the order of their names here.
std::string_view give_back_name(GiveBack give_back) {
    constexpr std::array<std::string_view, 3> kNames = {"never", "steadily", "in bursts"};
    return kNames.at(static_cast<std::size_t>(give_back));
}

std::string_view trend_name(Trend trend) {
    constexpr std::array<std::string_view, 5> kNames = {"leak", "growing", "plateau", "churn", "flat"};
    return kNames.at(static_cast<std::size_t>(trend));
}

SuspectRanking rank_suspects(const std::vector<Sample>& series) {
    if (series.size() < kMinSamplesForTrends)
        throw std::runtime_error("a trend needs at least " + std::to_string(kMinSamplesForTrends) +
                                 " samples, the series has " + std::to_string(series.size()) +
                                 " (watch longer, or with a shorter --interval)");
    const std::vector<double> seconds = seconds_since_start(series);
    const std::vector<double> work = allocations_since_start(series);
    const bool worked = work.back() > 0;
    const std::size_t recent_start = recent_work_start(work);
    const std::span<const double> recent_work(work.begin() + recent_start, work.end());

    SuspectRanking ranking{.process_allocs = static_cast<uint64_t>(std::max(0.0, work.back())), .suspects = {}};
    for (const SiteHistory& history : site_histories(series)) {
        const std::vector<double>& values = history.live_bytes;
        const std::span<const double> recent_values(values.begin() + recent_start, values.end());
        const LineFit by_work = fit_line(work, values);
        Suspect suspect{
            .id = history.id,
            .label = history.label,
            .growth_per_million_allocs = by_work.slope * kMillion,
            .r_squared = by_work.r_squared,
            .recent_growth_per_million_allocs = fit_line(recent_work, recent_values).slope * kMillion,
            .growth_per_hour = fit_line(seconds, values).slope * kSecondsPerHour,
            .retention = retention_of(history),
            .give_back = give_back_of(history, spread(values)),
            .first_live_bytes = values.front(),
            .last_live_bytes = values.back(),
        };
        suspect.trend = classify(suspect, spread(values), spread(recent_values), worked);
        ranking.suspects.push_back(std::move(suspect));
    }
    std::sort(ranking.suspects.begin(), ranking.suspects.end(), [](const Suspect& a, const Suspect& b) {
        return std::make_tuple(a.trend, -a.growth_per_million_allocs, -a.growth_per_hour, a.id) <
               std::make_tuple(b.trend, -b.growth_per_million_allocs, -b.growth_per_hour, b.id);
    });
    return ranking;
}

std::string classification_rules() {
    std::ostringstream rules;
    rules << "The clock is the process's own allocations, so idle time counts for nothing. "
             "GROWTH/M: least-squares slope of live bytes per million allocations of the process "
             "(per hour: the same over time); R2: how well that line fits; RETAINED: the share of "
             "what the site allocated during the series that is still live. "
             "leak: still grows over the last third of the work at >= "
          << 100 * kStillGrowingShare << "% of GROWTH/M, RETAINED >= " << 100 * kNeverFreesRetainedShare
          << "%, and no step between two samples freed as many blocks as it allocated or lost "
             "more than "
          << 100 * kGivenBackFallShare
          << "% of the range. growing: still grows like that and fits the line (R2 >= " << kGrowingMinRSquared
          << ") but frees part of what it allocates (a partial leak, or garbage a collector "
             "has not reached yet)"
          << ". plateau: grew, then varied by <= " << 100 * kPlateauMaxRecentSpread
          << "% of its range over the last third of the work, giving back no more than it "
             "allocated (a cache filled, a warm-up). churn: gives back in bursts, freeing more "
             "than it allocates or falling (a garbage collector, a pool), shrank, or changed "
             "without a trend. "
             "flat: never changed.";
    return rules.str();
}

}  // namespace leakwrap
