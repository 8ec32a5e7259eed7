#include "snapshot_diff.h"

#include "report_labels.h"
#include "sample_file.h"
#include "site_focus.h"

#include <algorithm>
#include <tuple>

namespace leakwrap {
namespace {

int64_t difference(uint64_t to, uint64_t from) { return static_cast<int64_t>(to) - static_cast<int64_t>(from); }

SampleCounters& operator+=(SampleCounters& sum, const SampleCounters& more) {
    sum.live_bytes += more.live_bytes;
    sum.live_blocks += more.live_blocks;
    sum.allocs += more.allocs;
    sum.frees += more.frees;
    return sum;
}

struct StackDigestHash {
    std::size_t operator()(const StackDigest& digest) const { return static_cast<std::size_t>(digest.first); }
};

// Rows in the order their keys first came, then by id: where ids tie (sites of two processes),
// the first snapshot's order stays.
std::vector<DiffRow> ordered_rows(std::vector<DiffRow> rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) { return a.id < b.id; });
    return rows;
}

template <class Key, class Hash>
DiffRow& row_of(std::unordered_map<Key, std::size_t, Hash>& index, std::vector<DiffRow>& rows, const Key& key,
                std::size_t snapshots) {
    const auto [entry, is_new] = index.try_emplace(key, rows.size());
    if (is_new) rows.push_back({{}, 0, std::vector<SampleCounters>(snapshots)});
    return rows[entry->second];
}

// Where two snapshots hold the same key twice (equal labels in series lines), the rows add up.
std::vector<DiffRow> aligned_sites(const std::vector<DiffSnapshot>& snapshots, SiteMatching matching) {
    std::vector<DiffRow> rows;
    // At least as many rows as the largest snapshot has sites: room for them from the start.
    std::size_t largest = 0;
    for (const DiffSnapshot& snapshot : snapshots) largest = std::max(largest, snapshot.sites.size());
    rows.reserve(largest);
    std::unordered_map<uint64_t, std::size_t> by_id;
    std::unordered_map<StackDigest, std::size_t, StackDigestHash> by_stack;
    for (std::size_t index = 0; index < snapshots.size(); ++index) {
        for (const DiffSnapshot::Site& site : snapshots[index].sites) {
            DiffRow& row = matching == SiteMatching::by_id ? row_of(by_id, rows, site.id, snapshots.size())
                                                           : row_of(by_stack, rows, site.stack, snapshots.size());
            row.label = site.label;
            row.id = site.id;
            row.counters[index] += site.counters;
        }
    }
    return ordered_rows(std::move(rows));
}

std::vector<DiffRow> aligned_bins(const std::vector<DiffSnapshot>& snapshots, DiffLabels& labels) {
    std::vector<DiffRow> rows;
    std::unordered_map<uint32_t, std::size_t> by_class;
    for (std::size_t index = 0; index < snapshots.size(); ++index) {
        for (const SampleBin& bin : snapshots[index].bins) {
            DiffRow& row = row_of(by_class, rows, bin.size_class, snapshots.size());
            row.label = labels.intern(size_class_label(bin.size_class));
            row.id = bin.size_class;
            row.counters[index] = bin.counters;
        }
    }
    return ordered_rows(std::move(rows));
}

DiffSnapshot::Site diff_site(const SampleSite& site, DiffLabels& labels) {
    return {site.id, stack_digest(site.stack_key), labels.intern(site.label), site.counters};
}

}  // namespace

int64_t DiffRow::live_bytes_change(std::size_t from, std::size_t to) const {
    return difference(counters[to].live_bytes, counters[from].live_bytes);
}

int64_t DiffRow::live_blocks_change(std::size_t from, std::size_t to) const {
    return difference(counters[to].live_blocks, counters[from].live_blocks);
}

std::string_view DiffLabels::intern(std::string_view label) {
    if (const auto found = index_.find(label); found != index_.end()) return texts_[found->second];
    const std::string& text = texts_.emplace_back(label);
    index_.emplace(text, texts_.size() - 1);
    return text;
}

DiffSnapshot read_diff_snapshot(const std::filesystem::path& path, DiffLabels& labels, const FocusPatterns& focus) {
    DiffSnapshot snapshot;
    visit_sample_file(
        path,
        [&](const nlohmann::json& head) {
            const Sample sample = head.contains("t") ? sample_from_json(head) : sample_head_from_report(head, 0);
            snapshot.pid = sample.pid;
            snapshot.totals = sample.totals;
            snapshot.bins = sample.bins;
        },
        [&](SampleSite&& site, bool has_stack) {
            snapshot.stacks = snapshot.stacks && has_stack;
            if (!focus.empty() && !keeps_site(site, focus)) return;
            snapshot.sites.push_back(diff_site(site, labels));
        });
    return snapshot;
}

SnapshotDiff align_snapshots(const std::vector<DiffSnapshot>& snapshots, std::shared_ptr<DiffLabels> labels) {
    SnapshotDiff diff;
    // By stack whenever every snapshot names its stacks, so that snapshots from before and after
    // a restart compare; by id only for series lines without stacks from one process, whose
    // labels alone could join two rows.
    const bool stacks =
        std::all_of(snapshots.begin(), snapshots.end(), [](const DiffSnapshot& snapshot) { return snapshot.stacks; });
    const bool one_process = std::all_of(snapshots.begin(), snapshots.end(), [&](const DiffSnapshot& snapshot) {
        return snapshot.pid == snapshots.front().pid;
    });
    diff.matching = !stacks && one_process ? SiteMatching::by_id : SiteMatching::by_stack;
    for (const DiffSnapshot& snapshot : snapshots) diff.totals.push_back(snapshot.totals);
    diff.sites = aligned_sites(snapshots, diff.matching);
    diff.bins = aligned_bins(snapshots, *labels);
    diff.labels = std::move(labels);
    return diff;
}

SnapshotDiff align_snapshots(const std::vector<Sample>& samples) {
    auto labels = std::make_shared<DiffLabels>();
    std::vector<DiffSnapshot> snapshots;
    for (const Sample& sample : samples) {
        DiffSnapshot& snapshot = snapshots.emplace_back();
        snapshot.pid = sample.pid;
        snapshot.stacks = sample.stacks;
        snapshot.totals = sample.totals;
        snapshot.bins = sample.bins;
        for (const SampleSite& site : sample.sites) snapshot.sites.push_back(diff_site(site, *labels));
    }
    return align_snapshots(snapshots, std::move(labels));
}

std::vector<const DiffRow*> changed_rows(const std::vector<DiffRow>& rows, std::size_t from, std::size_t to) {
    std::vector<const DiffRow*> changed;
    for (const DiffRow& row : rows)
        if (row.live_bytes_change(from, to) != 0 || row.live_blocks_change(from, to) != 0) changed.push_back(&row);
    std::stable_sort(changed.begin(), changed.end(), [&](const DiffRow* a, const DiffRow* b) {
        return std::make_tuple(a->live_bytes_change(from, to), a->live_blocks_change(from, to)) >
               std::make_tuple(b->live_bytes_change(from, to), b->live_blocks_change(from, to));
    });
    return changed;
}

std::vector<const DiffRow*> retained_rows(const std::vector<DiffRow>& rows, double kept_percent) {
    constexpr std::size_t a = 0, b = 1, c = 2;
    std::vector<const DiffRow*> retained;
    for (const DiffRow& row : rows) {
        const int64_t growth = row.live_bytes_change(a, b);
        if (growth > 0 &&
            static_cast<double>(row.live_bytes_change(a, c)) >= kept_percent / 100 * static_cast<double>(growth))
            retained.push_back(&row);
    }
    std::stable_sort(retained.begin(), retained.end(), [&](const DiffRow* x, const DiffRow* y) {
        return x->live_bytes_change(a, c) > y->live_bytes_change(a, c);
    });
    return retained;
}

}  // namespace leakwrap
