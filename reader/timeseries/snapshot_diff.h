// `leakwrap-report diff`: what changed between snapshots of a process, each a `--format json`
// report or one line of a series. With two, every site's and size class's change (b - a); with
// three, the retained view: what grew from a to b and was still there at c.
#pragma once

#include "focus_patterns.h"
#include "series.h"
#include "stack_digest.h"

#include <cstdint>
#include <deque>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace leakwrap {

// Sites are the same site across snapshots by their stack key (site_label.h), so that snapshots
// from before and after a restart compare; by their row id only for series lines without stacks
// from one process.
enum class SiteMatching { by_id, by_stack };

// The sites' labels of the snapshots of one diff, each text kept once: a Ruby process has
// thousands of sites under the same "ruby file:line".
class DiffLabels {
public:
    std::string_view intern(std::string_view label);

private:
    std::deque<std::string> texts_;  // a deque never moves its elements, so views stay valid
    std::unordered_map<std::string_view, std::size_t> index_;
};

// One snapshot as diff keeps it: per site its id, the digest of its stack key, its label and its
// counters, and no more.
struct DiffSnapshot {
    struct Site {
        uint64_t id = 0;
        StackDigest stack;
        std::string_view label;  // in the diff's DiffLabels
        SampleCounters counters;
    };
    int64_t pid = 0;
    bool stacks = true;  // every site's key names its stack (see Sample::stacks)
    SampleCounters totals;
    std::vector<SampleBin> bins;
    // Grown a chunk at a time: a Rails process's 44,000 sites, grown by doubling, needed room
    // for twice as many while they were moved.
    std::deque<Site> sites;
};

// A file holding one JSON object, a report or one line of a series, read site by site
// (visit_sample_file): only what DiffSnapshot keeps is kept, of the sites `focus` keeps.
DiffSnapshot read_diff_snapshot(const std::filesystem::path& path, DiffLabels& labels, const FocusPatterns& focus);

// One site or size class, with its counters in each snapshot (zero where it is absent).
struct DiffRow {
    std::string_view label;                // the site's label (in the diff's labels), or the class's as in "≤320 B"
    uint64_t id = 0;                       // the site's id in the latest snapshot that has it, or the class
    std::vector<SampleCounters> counters;  // one per snapshot, in the order given

    int64_t live_bytes_change(std::size_t from, std::size_t to) const;
    int64_t live_blocks_change(std::size_t from, std::size_t to) const;
};

struct SnapshotDiff {
    SiteMatching matching = SiteMatching::by_id;
    std::vector<SampleCounters> totals;  // one per snapshot
    std::vector<DiffRow> sites;
    std::vector<DiffRow> bins;
    std::shared_ptr<DiffLabels> labels;  // what the rows' labels view
};

// Lines the snapshots up; rows ordered by id.
SnapshotDiff align_snapshots(const std::vector<DiffSnapshot>& snapshots, std::shared_ptr<DiffLabels> labels);
// The same for samples (taken in full, as tests make them).
SnapshotDiff align_snapshots(const std::vector<Sample>& snapshots);

// The rows whose live bytes or blocks changed from snapshot `from` to `to`, most growth first:
// views of `rows`, which must outlive them.
std::vector<const DiffRow*> changed_rows(const std::vector<DiffRow>& rows, std::size_t from, std::size_t to);

inline constexpr double kDefaultKeptPercent = 100;

// The retained view of three snapshots a, b, c: the rows whose live bytes grew from a to b,
// live(b) > live(a), and that still held at least kept_percent of that growth at c,
// live(c) - live(a) >= kept_percent / 100 * (live(b) - live(a)). At the default of 100 that is
// live(c) >= live(b): memory that a later phase did not give back. Most retained bytes first;
// views of `rows`, which must outlive them.
std::vector<const DiffRow*> retained_rows(const std::vector<DiffRow>& rows, double kept_percent);

}  // namespace leakwrap
