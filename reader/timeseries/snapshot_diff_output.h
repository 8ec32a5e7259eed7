// The outputs of `diff`: tables for people and a JSON object for scripts. Two snapshots give the
// changes b - a; three give the retained view (snapshot_diff.h).
#pragma once

#include "snapshot_diff.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <ostream>

namespace leakwrap {

struct DiffOutputOptions {
    std::size_t top = 20;  // rows per table; 0 = all
    double kept_percent = kDefaultKeptPercent;
    bool full_names = false;  // text: labels as they are, not shortened (short_site_label)
};

void write_diff_text(std::ostream& out, const SnapshotDiff& diff, const DiffOutputOptions& options);

// Two snapshots: {"matching": "id"|"stack", "totals": [..], "sites": [row], "bins": [row]} with
// the changed rows, most growth first; three: {"matching", "totals", "kept_percent",
// "retained_sites": [row], "retained_bins": [row]}. A row is {"id" (a size class for bins),
// "label", "live_bytes": [one per snapshot], "live_blocks": [..], "live_bytes_change",
// "live_blocks_change"} with the changes from a to the last snapshot.
nlohmann::json diff_json(const SnapshotDiff& diff, const DiffOutputOptions& options);

}  // namespace leakwrap
