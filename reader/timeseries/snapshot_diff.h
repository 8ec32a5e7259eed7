// `leakwrap-report diff`: what changed between snapshots of a process, each a `--format json`
// report or one line of a series. With two, every site's and size class's change (b - a); with
// three, the retained view: what grew from a to b and was still there at c.
#pragma once

#include "series.h"

#include <cstdint>
#include <string>
#include <vector>

namespace leakwrap {

// Sites are the same site across snapshots of one process by their row id; across processes
// (pids differ: say before and after a restart) by their stack key (site_label.h).
enum class SiteMatching { by_id, by_stack };

// One site or size class, with its counters in each snapshot (zero where it is absent).
struct DiffRow {
    std::string label;       // the site's label, or the class's as in "≤320 B"
    uint64_t id = 0;         // the site's id in the latest snapshot that has it, or the class
    std::vector<SampleCounters> counters;  // one per snapshot, in the order given

    int64_t live_bytes_change(std::size_t from, std::size_t to) const;
    int64_t live_blocks_change(std::size_t from, std::size_t to) const;
};

struct SnapshotDiff {
    SiteMatching matching = SiteMatching::by_id;
    std::vector<SampleCounters> totals;  // one per snapshot
    std::vector<DiffRow> sites;
    std::vector<DiffRow> bins;
};

// Lines the snapshots up; rows ordered by id.
SnapshotDiff align_snapshots(const std::vector<Sample>& snapshots);

// The rows whose live bytes or blocks changed from snapshot `from` to `to`, most growth first.
std::vector<DiffRow> changed_rows(const std::vector<DiffRow>& rows, std::size_t from,
                                  std::size_t to);

inline constexpr double kDefaultKeptPercent = 100;

// The retained view of three snapshots a, b, c: the rows whose live bytes grew from a to b,
// live(b) > live(a), and that still held at least kept_percent of that growth at c,
// live(c) - live(a) >= kept_percent / 100 * (live(b) - live(a)). At the default of 100 that is
// live(c) >= live(b): memory that a later phase did not give back. Most retained bytes first.
std::vector<DiffRow> retained_rows(const std::vector<DiffRow>& rows, double kept_percent);

}  // namespace leakwrap
