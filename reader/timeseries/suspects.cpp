#include "suspects.h"

#include "series_history.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <tuple>

namespace leakwrap {
namespace {

constexpr double kSecondsPerHour = 3600;

struct LineFit {
    double slope = 0;  // per second
    double r_squared = 1;
};

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
    const double n = static_cast<double>(x.size());
    double mean_x = 0, mean_y = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        mean_x += x[i] / n;
        mean_y += y[i] / n;
    }
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

double rising_share(const std::vector<double>& values) {
    std::size_t rising = 0;
    for (std::size_t i = 1; i < values.size(); ++i) rising += values[i] >= values[i - 1];
    return static_cast<double>(rising) / static_cast<double>(values.size() - 1);
}

double spread(std::span<const double> values) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    return *high - *low;
}

Trend classify(const Suspect& suspect, double whole_spread, double recent_spread) {
    if (whole_spread == 0) return Trend::flat;
    const bool growing = suspect.slope_bytes_per_hour > 0;
    if (growing && suspect.r_squared >= kLeakMinRSquared &&
        suspect.rising_share >= kLeakMinRisingShare &&
        suspect.recent_slope_bytes_per_hour >= kStillGrowingShare * suspect.slope_bytes_per_hour)
        return Trend::leak;
    if (suspect.last_live_bytes > suspect.first_live_bytes &&
        recent_spread <= kPlateauMaxRecentSpread * whole_spread)
        return Trend::plateau;
    return Trend::churn;
}

}  // namespace

std::string_view trend_name(Trend trend) {
    switch (trend) {
        case Trend::leak:
            return "leak";
        case Trend::plateau:
            return "plateau";
        case Trend::churn:
            return "churn";
        case Trend::flat:
            break;
    }
    return "flat";
}

std::vector<Suspect> rank_suspects(const std::vector<Sample>& series) {
    if (series.size() < kMinSamplesForTrends)
        throw std::runtime_error("a trend needs at least " + std::to_string(kMinSamplesForTrends) +
                                 " samples, the series has " + std::to_string(series.size()) +
                                 " (watch longer, or with a shorter --interval)");
    const std::vector<double> seconds = seconds_since_start(series);
    // The last third of the steps, so at least the last two samples.
    const std::size_t recent_start = 2 * (series.size() - 1) / 3;
    const std::span<const double> recent_seconds(seconds.begin() + recent_start, seconds.end());

    std::vector<Suspect> suspects;
    for (const SiteHistory& history : site_histories(series)) {
        const std::vector<double>& values = history.live_bytes;
        const std::span<const double> recent_values(values.begin() + recent_start, values.end());
        const LineFit whole = fit_line(seconds, values);
        Suspect suspect{
            .id = history.id,
            .label = history.label,
            .trend = Trend::flat,
            .slope_bytes_per_hour = whole.slope * kSecondsPerHour,
            .r_squared = whole.r_squared,
            .rising_share = rising_share(values),
            .recent_slope_bytes_per_hour =
                fit_line(recent_seconds, recent_values).slope * kSecondsPerHour,
            .first_live_bytes = values.front(),
            .last_live_bytes = values.back(),
        };
        suspect.trend = classify(suspect, spread(values), spread(recent_values));
        suspects.push_back(std::move(suspect));
    }
    std::sort(suspects.begin(), suspects.end(), [](const Suspect& a, const Suspect& b) {
        return std::make_tuple(a.trend, -a.slope_bytes_per_hour, a.id) <
               std::make_tuple(b.trend, -b.slope_bytes_per_hour, b.id);
    });
    return suspects;
}

}  // namespace leakwrap
