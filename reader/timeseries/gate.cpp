#include "gate.h"

#include "change_units.h"
#include "memory_growth.h"
#include "report_labels.h"
#include "suspects_output.h"

#include <stdexcept>

namespace leakwrap {
namespace {

std::vector<std::string> leaks(const SuspectRanking& ranking) {
    std::vector<std::string> failures;
    for (const Suspect& suspect : ranking.suspects) {
        if (suspect.trend != Trend::leak) continue;
        const auto cells = suspect_cells(suspect);
        failures.push_back("leak: " + cells.back() + ": " + cells[1] + " per million allocations (" + cells[2] +
                           "), retained " + cells[4] + ", " + cells[6] + " live at the end");
    }
    return failures;
}

std::vector<std::string> growth(const std::vector<Sample>& series, uint64_t max_growth) {
    const double grown =
        static_cast<double>(series.back().totals.live_bytes) - static_cast<double>(series.front().totals.live_bytes);
    if (grown <= static_cast<double>(max_growth)) return {};
    return {"growth: the tracked live bytes grew by " + signed_human_bytes(grown) +
            " from the first to the last sample, more than --max-growth " + human_bytes(max_growth)};
}

std::vector<std::string> rss(const std::vector<Sample>& series) {
    const std::optional<MemoryGrowth> memory = memory_growth(series);
    if (!memory)
        throw std::runtime_error(
            "--fail-on rss: the series has no RSS to judge (its first or last "
            "line was written by a watch that did not record it)");
    if (!memory->untracked) return {};
    return {"rss: the RSS grew by " + signed_human_bytes(memory->rss) + " while the tracked live bytes changed by " +
            signed_human_bytes(memory->tracked_live) + ": memory outside every call site"};
}

}  // namespace

std::vector<std::string> gate_failures(const std::vector<Sample>& series, const SuspectRanking& ranking,
                                       const GateOptions& options) {
    std::vector<std::string> failures;
    for (const GateCheck check : options.checks) {
        std::vector<std::string> found;
        switch (check) {
            case GateCheck::leak: found = leaks(ranking); break;
            case GateCheck::growth: found = growth(series, options.max_growth); break;
            case GateCheck::rss: found = rss(series); break;
        }
        failures.insert(failures.end(), found.begin(), found.end());
    }
    return failures;
}

}  // namespace leakwrap
