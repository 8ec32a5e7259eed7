#include "snapshot_diff.h"

#include "report_labels.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace leakwrap {
namespace {

int64_t difference(uint64_t to, uint64_t from) {
    return static_cast<int64_t>(to) - static_cast<int64_t>(from);
}

SampleCounters& operator+=(SampleCounters& sum, const SampleCounters& more) {
    sum.live_bytes += more.live_bytes;
    sum.live_blocks += more.live_blocks;
    sum.allocs += more.allocs;
    sum.frees += more.frees;
    return sum;
}

bool one_process(const std::vector<Sample>& snapshots) {
    return std::all_of(snapshots.begin(), snapshots.end(),
                       [&](const Sample& sample) { return sample.pid == snapshots.front().pid; });
}

template <class Key>
std::vector<DiffRow> ordered_rows(std::map<Key, DiffRow>& by_key) {
    std::vector<DiffRow> rows;
    for (auto& [key, row] : by_key) rows.push_back(std::move(row));
    std::stable_sort(rows.begin(), rows.end(),
                     [](const DiffRow& a, const DiffRow& b) { return a.id < b.id; });
    return rows;
}

// Where two snapshots hold the same key twice (equal labels in series lines), the rows add up.
std::vector<DiffRow> aligned_sites(const std::vector<Sample>& snapshots, SiteMatching matching) {
    std::map<std::string, DiffRow> by_key;
    for (std::size_t index = 0; index < snapshots.size(); ++index) {
        for (const SampleSite& site : snapshots[index].sites) {
            DiffRow& row = by_key[matching == SiteMatching::by_id ? std::to_string(site.id)
                                                                   : site.stack_key];
            row.label = site.label;
            row.id = site.id;
            row.counters.resize(snapshots.size());
            row.counters[index] += site.counters;
        }
    }
    return ordered_rows(by_key);
}

std::vector<DiffRow> aligned_bins(const std::vector<Sample>& snapshots) {
    std::map<uint32_t, DiffRow> by_class;
    for (std::size_t index = 0; index < snapshots.size(); ++index) {
        for (const SampleBin& bin : snapshots[index].bins) {
            DiffRow& row = by_class[bin.size_class];
            row.label = size_class_label(bin.size_class);
            row.id = bin.size_class;
            row.counters.resize(snapshots.size());
            row.counters[index] = bin.counters;
        }
    }
    return ordered_rows(by_class);
}

}  // namespace

int64_t DiffRow::live_bytes_change(std::size_t from, std::size_t to) const {
    return difference(counters[to].live_bytes, counters[from].live_bytes);
}

int64_t DiffRow::live_blocks_change(std::size_t from, std::size_t to) const {
    return difference(counters[to].live_blocks, counters[from].live_blocks);
}

SnapshotDiff align_snapshots(const std::vector<Sample>& snapshots) {
    SnapshotDiff diff;
    // By stack whenever every snapshot names its stacks, so that snapshots from before and after
    // a restart compare; by id only for series lines without stacks from one process, whose
    // labels alone could join two rows.
    const bool stacks = std::all_of(snapshots.begin(), snapshots.end(),
                                    [](const Sample& sample) { return sample.stacks; });
    diff.matching = !stacks && one_process(snapshots) ? SiteMatching::by_id : SiteMatching::by_stack;
    for (const Sample& sample : snapshots) diff.totals.push_back(sample.totals);
    diff.sites = aligned_sites(snapshots, diff.matching);
    diff.bins = aligned_bins(snapshots);
    return diff;
}

std::vector<DiffRow> changed_rows(const std::vector<DiffRow>& rows, std::size_t from,
                                  std::size_t to) {
    std::vector<DiffRow> changed;
    for (const DiffRow& row : rows)
        if (row.live_bytes_change(from, to) != 0 || row.live_blocks_change(from, to) != 0)
            changed.push_back(row);
    std::stable_sort(changed.begin(), changed.end(), [&](const DiffRow& a, const DiffRow& b) {
        return std::make_tuple(a.live_bytes_change(from, to), a.live_blocks_change(from, to)) >
               std::make_tuple(b.live_bytes_change(from, to), b.live_blocks_change(from, to));
    });
    return changed;
}

std::vector<DiffRow> retained_rows(const std::vector<DiffRow>& rows, double kept_percent) {
    constexpr std::size_t a = 0, b = 1, c = 2;
    std::vector<DiffRow> retained;
    for (const DiffRow& row : rows) {
        const int64_t growth = row.live_bytes_change(a, b);
        if (growth > 0 && static_cast<double>(row.live_bytes_change(a, c)) >=
                              kept_percent / 100 * static_cast<double>(growth))
            retained.push_back(row);
    }
    std::stable_sort(retained.begin(), retained.end(), [&](const DiffRow& x, const DiffRow& y) {
        return x.live_bytes_change(a, c) > y.live_bytes_change(a, c);
    });
    return retained;
}

}  // namespace leakwrap
