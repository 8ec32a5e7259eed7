#include "series_history.h"

#include <map>

namespace leakwrap {

std::vector<double> seconds_since_start(const std::vector<Sample>& series) {
    std::vector<double> seconds;
    for (const Sample& sample : series) seconds.push_back(sample.t - series.front().t);
    return seconds;
}

std::vector<double> allocations_since_start(const std::vector<Sample>& series) {
    std::vector<double> allocations;
    for (const Sample& sample : series)
        allocations.push_back(static_cast<double>(sample.totals.allocs) -
                              static_cast<double>(series.front().totals.allocs));
    return allocations;
}

std::vector<SiteHistory> site_histories(const std::vector<Sample>& series) {
    std::map<uint64_t, SiteHistory> by_id;
    for (std::size_t index = 0; index < series.size(); ++index) {
        for (const SampleSite& site : series[index].sites) {
            SiteHistory& history = by_id[site.id];
            history.id = site.id;
            history.label = site.label;
            history.live_bytes.resize(series.size());
            history.allocs.resize(series.size());
            history.frees.resize(series.size());
            history.present.resize(series.size());
            history.live_bytes[index] = static_cast<double>(site.counters.live_bytes);
            history.allocs[index] = static_cast<double>(site.counters.allocs);
            history.frees[index] = static_cast<double>(site.counters.frees);
            history.present[index] = true;
        }
    }
    std::vector<SiteHistory> histories;
    for (auto& [id, history] : by_id) histories.push_back(std::move(history));
    return histories;
}

std::vector<BinHistory> bin_histories(const std::vector<Sample>& series) {
    std::map<uint32_t, BinHistory> by_class;
    for (std::size_t index = 0; index < series.size(); ++index) {
        for (const SampleBin& bin : series[index].bins) {
            BinHistory& history = by_class[bin.size_class];
            history.size_class = bin.size_class;
            history.live_bytes.resize(series.size());
            history.live_bytes[index] = static_cast<double>(bin.counters.live_bytes);
        }
    }
    std::vector<BinHistory> histories;
    for (auto& [size_class, history] : by_class) histories.push_back(std::move(history));
    return histories;
}

}  // namespace leakwrap
