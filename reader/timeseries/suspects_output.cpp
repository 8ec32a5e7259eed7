#include "suspects_output.h"

#include "change_units.h"
#include "report_labels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>

namespace leakwrap {
namespace {

std::size_t shown(const std::vector<Suspect>& suspects, std::size_t top) {
    return top == 0 ? suspects.size() : std::min(top, suspects.size());
}

uint64_t whole_bytes(double bytes) { return static_cast<uint64_t>(std::llround(bytes)); }

std::string fixed(double value, int decimals) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
    return text;
}

}  // namespace

void write_suspects_text(std::ostream& out, const std::vector<Sample>& series,
                         const std::vector<Suspect>& suspects, std::size_t top) {
    const double seconds = series.back().t - series.front().t;
    out << series.size() << " samples of pid " << series.front().pid << " over "
        << elapsed_clock(seconds, seconds < 60) << "; " << suspects.size()
        << " sites, leaks first\n\n";
    out << std::left << std::setw(9) << "CLASS" << std::setw(15) << "GROWTH" << std::setw(6)
        << "R2" << std::setw(8) << "RISING" << std::setw(12) << "FIRST" << std::setw(12)
        << "LAST"
        << "SITE\n";
    for (std::size_t i = 0; i < shown(suspects, top); ++i) {
        const Suspect& suspect = suspects[i];
        out << std::setw(9) << trend_name(suspect.trend) << std::setw(15)
            << bytes_per_hour(suspect.slope_bytes_per_hour) << std::setw(6)
            << fixed(suspect.r_squared, 2) << std::setw(8)
            << (fixed(100 * suspect.rising_share, 0) + "%") << std::setw(12)
            << human_bytes(whole_bytes(suspect.first_live_bytes)) << std::setw(12)
            << human_bytes(whole_bytes(suspect.last_live_bytes)) << suspect.label << "  [id "
            << suspect.id << "]\n";
    }
    if (shown(suspects, top) < suspects.size())
        out << "… " << suspects.size() - shown(suspects, top) << " more (--top 0 shows all)\n";
    out << "\nGROWTH: least-squares slope of live bytes; R2: how well that line fits; RISING: "
           "steps that did not go down.\n"
           "leak: GROWTH > 0, R2 >= "
        << kLeakMinRSquared << ", RISING >= " << 100 * kLeakMinRisingShare
        << "%, and the last third still grows at >= " << 100 * kStillGrowingShare
        << "% of GROWTH.\n"
           "plateau: grew, then varied by <= "
        << 100 * kPlateauMaxRecentSpread
        << "% of its range over the last third (a cache filling up). churn: rises and falls. "
           "flat: never changed.\n";
}

nlohmann::json suspects_json(const std::vector<Sample>& series,
                             const std::vector<Suspect>& suspects, std::size_t top) {
    nlohmann::json entries = nlohmann::json::array();
    for (std::size_t i = 0; i < shown(suspects, top); ++i) {
        const Suspect& suspect = suspects[i];
        entries.push_back({
            {"id", suspect.id},
            {"label", suspect.label},
            {"class", trend_name(suspect.trend)},
            {"slope_bytes_per_hour", suspect.slope_bytes_per_hour},
            {"r_squared", suspect.r_squared},
            {"rising_share", suspect.rising_share},
            {"recent_slope_bytes_per_hour", suspect.recent_slope_bytes_per_hour},
            {"first_live_bytes", whole_bytes(suspect.first_live_bytes)},
            {"last_live_bytes", whole_bytes(suspect.last_live_bytes)},
        });
    }
    return {
        {"pid", series.front().pid},
        {"samples", series.size()},
        {"seconds", series.back().t - series.front().t},
        {"suspects", std::move(entries)},
    };
}

}  // namespace leakwrap
