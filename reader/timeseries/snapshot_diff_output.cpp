#include "snapshot_diff_output.h"

#include "change_units.h"
#include "report_labels.h"
#include "short_names.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <span>
#include <string>

namespace leakwrap {
namespace {

constexpr std::size_t kFirst = 0;

bool is_retained_view(const SnapshotDiff& diff) { return diff.totals.size() == 3; }

std::size_t last_index(const SnapshotDiff& diff) { return diff.totals.size() - 1; }

std::span<const DiffRow* const> shown_rows(const std::vector<const DiffRow*>& rows, std::size_t top) {
    return std::span<const DiffRow* const>(rows).first(top != 0 ? std::min(top, rows.size()) : rows.size());
}

std::string signed_count(int64_t count) { return (count >= 0 ? "+" : "") + std::to_string(count); }

std::string matching_name(SiteMatching matching) { return matching == SiteMatching::by_id ? "id" : "stack"; }

// "A", "B", "C": the snapshots as the user named them on the command line.
std::string snapshot_name(std::size_t index) { return std::string(1, static_cast<char>('A' + index)); }

void write_table(std::ostream& out, const std::string& title, const std::vector<const DiffRow*>& rows,
                 std::size_t snapshots, const DiffOutputOptions& options) {
    const std::size_t top = options.top;
    out << '\n' << title << '\n';
    if (rows.empty()) {
        out << "  (none)\n";
        return;
    }
    out << std::left << std::setw(14) << "CHANGE" << std::setw(10) << "BLOCKS";
    for (std::size_t i = 0; i < snapshots; ++i) out << std::setw(12) << snapshot_name(i);
    out << "WHERE\n";
    for (const DiffRow* shown : shown_rows(rows, top)) {
        const DiffRow& row = *shown;
        out << std::setw(14) << signed_human_bytes(static_cast<double>(row.live_bytes_change(kFirst, snapshots - 1)))
            << std::setw(10) << signed_count(row.live_blocks_change(kFirst, snapshots - 1));
        for (const SampleCounters& counters : row.counters) out << std::setw(12) << human_bytes(counters.live_bytes);
        out << (options.full_names ? row.label : short_site_label(row.label)) << '\n';
    }
    if (top != 0 && rows.size() > top) out << "… " << rows.size() - top << " more (--top 0 shows all)\n";
}

nlohmann::json rows_json(const std::vector<const DiffRow*>& rows, std::size_t last, std::size_t top) {
    nlohmann::json entries = nlohmann::json::array();
    for (const DiffRow* shown : shown_rows(rows, top)) {
        const DiffRow& row = *shown;
        nlohmann::json live_bytes = nlohmann::json::array(), live_blocks = nlohmann::json::array();
        for (const SampleCounters& counters : row.counters) {
            live_bytes.push_back(counters.live_bytes);
            live_blocks.push_back(counters.live_blocks);
        }
        entries.push_back({
            {"id", row.id},
            {"label", row.label},
            {"live_bytes", std::move(live_bytes)},
            {"live_blocks", std::move(live_blocks)},
            {"live_bytes_change", row.live_bytes_change(kFirst, last)},
            {"live_blocks_change", row.live_blocks_change(kFirst, last)},
        });
    }
    return entries;
}

}  // namespace

void write_diff_text(std::ostream& out, const SnapshotDiff& diff, const DiffOutputOptions& options) {
    const std::size_t last = last_index(diff);
    out << "live bytes:";
    for (std::size_t i = 0; i < diff.totals.size(); ++i)
        out << (i == 0 ? " " : " -> ") << snapshot_name(i) << ' ' << human_bytes(diff.totals[i].live_bytes);
    out << " ("
        << signed_human_bytes(static_cast<double>(diff.totals[last].live_bytes) -
                              static_cast<double>(diff.totals[kFirst].live_bytes))
        << "); sites matched by "
        << (diff.matching == SiteMatching::by_id ? "id (series lines without stacks)" : "stack") << '\n';
    if (!is_retained_view(diff)) {
        write_table(out, "SITES, most growth of live bytes first (B - A)", changed_rows(diff.sites, kFirst, last),
                    diff.totals.size(), options);
        write_table(out, "SIZE CLASSES, most growth first (B - A)", changed_rows(diff.bins, kFirst, last),
                    diff.totals.size(), options);
        return;
    }
    char kept[32];
    std::snprintf(kept, sizeof(kept), "%g%%", options.kept_percent);  // 100%, 50%, 62.5%
    const std::string rule =
        "grew from A to B and kept at least " + std::string(kept) + " of that growth at C; CHANGE is C - A";
    write_table(out, "RETAINED SITES: " + rule, retained_rows(diff.sites, options.kept_percent), diff.totals.size(),
                options);
    write_table(out, "RETAINED SIZE CLASSES: " + rule, retained_rows(diff.bins, options.kept_percent),
                diff.totals.size(), options);
}

nlohmann::json diff_json(const SnapshotDiff& diff, const DiffOutputOptions& options) {
    const std::size_t last = last_index(diff);
    nlohmann::json totals = nlohmann::json::array();
    for (const SampleCounters& counters : diff.totals)
        totals.push_back({{"live_bytes", counters.live_bytes}, {"live_blocks", counters.live_blocks}});
    nlohmann::json result = {{"matching", matching_name(diff.matching)}, {"totals", std::move(totals)}};
    if (!is_retained_view(diff)) {
        result["sites"] = rows_json(changed_rows(diff.sites, kFirst, last), last, options.top);
        result["bins"] = rows_json(changed_rows(diff.bins, kFirst, last), last, options.top);
        return result;
    }
    result["kept_percent"] = options.kept_percent;
    result["retained_sites"] = rows_json(retained_rows(diff.sites, options.kept_percent), last, options.top);
    result["retained_bins"] = rows_json(retained_rows(diff.bins, options.kept_percent), last, options.top);
    return result;
}

}  // namespace leakwrap
