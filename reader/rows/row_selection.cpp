#include "row_selection.h"

#include "best_of.h"
#include "report_bins.h"
#include "report_labels.h"
#include "sampling_estimate.h"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace leakwrap {

FocusVerdict RowMatcher::native_verdict(const ResolvedFrame& frame) {
    const auto [entry, is_new] = native_.try_emplace(&frame);
    if (is_new) {
        if (frame.function) entry->second |= patterns_.verdict(frame.function->str());
        if (frame.file) entry->second |= patterns_.verdict(*frame.file);
        if (frame.module) entry->second |= patterns_.verdict(*frame.module);
    }
    return entry->second;
}

bool RowMatcher::keeps(const ReportRow& row) {
    FocusVerdict verdict;
    for (const uint64_t address : row.frames())
        for (const ResolvedFrame& frame : symbolizer_.resolve(address, row.module_generation()))
            verdict |= native_verdict(frame);
    for (const RubyLocation& location : row.ruby()) {
        std::string text = ruby_location_text(location);
        const auto found = ruby_.find(text);
        verdict |= found != ruby_.end() ? found->second : ruby_.emplace(text, patterns_.verdict(text)).first->second;
    }
    return patterns_.keeps(verdict);
}

std::vector<ReportRow> focused_rows(const Snapshot& snapshot, std::vector<ReportRow> rows, RowMatcher& matcher) {
    if (rows.empty() || rows.front().by == Grouping::native) {
        std::erase_if(rows, [&](const ReportRow& row) { return !matcher.keeps(row); });
        return rows;
    }
    const Grouping grouping = rows.front().by;
    rows = std::vector<ReportRow>();  // given back, not only cleared as `= {}` would
    const std::vector<bool> kept = records_of_kept_native_rows(snapshot, matcher);
    return report_rows(snapshot, grouping, &kept);
}

std::vector<bool> records_of_kept_native_rows(const Snapshot& snapshot, RowMatcher& matcher) {
    const RowAssignment native = assign_rows(snapshot, Grouping::native);
    enum Verdict : uint8_t { kUnknown, kKept, kLeftOut };
    std::vector<Verdict> verdicts(native.row_count(), kUnknown);
    std::vector<bool> kept(snapshot.sites.size());
    for (uint32_t position = 0; position < snapshot.sites.size(); ++position) {
        const uint32_t row = native.row_of_site[position];
        if (row == RowAssignment::kNoRow) continue;
        // Rows are numbered by their first records, which come first in the sites.
        if (verdicts[row] == kUnknown)
            verdicts[row] =
                matcher.keeps(FirstRecordRow(snapshot.sites[position], Grouping::native).row()) ? kKept : kLeftOut;
        kept[position] = verdicts[row] == kKept;
    }
    return kept;
}

namespace {

// Each row's sums as the ranking reads them: live bytes and blocks (LiveSum), and the sort key's
// counter (RowRanking's) unless that is live bytes: 16 bytes a row under the default sort, half
// the row's Counters, as ranking every row of a large process is the text report's peak.
class RowSums {
public:
    RowSums(std::size_t rows, const RowRanking& ranking, SortKey sort)
        : live_bytes_(rows), live_blocks_(rows), primary_(sort == SortKey::live ? 0 : rows), ranking_(ranking) {}

    void add(uint32_t row, const Counters& counters) {
        live_bytes_[row].add(counters.alloc_bytes, counters.free_bytes);
        live_blocks_[row].add(counters.allocs, counters.frees);
        if (primary_.empty()) return;
        // Saturating, as Counters sums.
        if (__builtin_add_overflow(primary_[row], ranking_.values_of(counters).primary, &primary_[row]))
            primary_[row] = UINT64_MAX;
    }

    RankedValues values(uint32_t row) const {
        RankedValues values{0, live_bytes_[row].value(), live_blocks_[row].value()};
        values.primary = primary_.empty() ? values.live_bytes : primary_[row];
        return values;
    }

private:
    std::vector<LiveSum> live_bytes_, live_blocks_;
    std::vector<uint64_t> primary_;
    const RowRanking& ranking_;
};

// Every row counted and ranked, only the size-class table's made: the ranked ones are made when
// visited, a batch at a time.
RowSelection ranked_selection(const Snapshot& snapshot, const ReportOptions& options) {
    RowSelection selection;
    selection.assignment = assign_rows(snapshot, options.by);
    const RowAssignment& assignment = selection.assignment;
    selection.all_rows = selection.kept_rows = assignment.row_count();
    {
        const RowRanking ranking(options);
        RowSums sums(assignment.row_count(), ranking, options.sort);
        for (std::size_t position = 0; position < snapshot.sites.size(); ++position) {
            const uint32_t row = assignment.row_of_site[position];
            if (row == RowAssignment::kNoRow) continue;
            const Site& site = snapshot.sites[position];
            const Counters counters = estimated_counters(site.counters(), snapshot.sample_interval);
            sums.add(row, counters);
            selection.counters += counters;
        }
        // Row numbers rank as the rows' ids do (see RowAssignment).
        const auto before = [&](uint32_t a, uint32_t b) {
            return ranking.before(sums.values(a), a, sums.values(b), b);
        };
        // The best --top rows (all rows with --top 0).
        BestOf<uint32_t, decltype(before)> best(ranking.shown_of(assignment.row_count()), before);
        for (uint32_t row = 0; row < assignment.row_count(); ++row)
            if (ranking.shown(sums.values(row))) best.offer(row);
        selection.ranked = std::move(best).take();
    }
    std::vector<bool> class_tops(assignment.row_count());
    mark_size_class_top_rows(snapshot, assignment, class_tops);
    selection.rows = make_rows(snapshot, options.by, assignment, &class_tops);
    selection.rows_made_when_visited = true;
    return selection;
}

}  // namespace

std::size_t for_each_ranked_row(const Snapshot& snapshot, const RowSelection& selection, const ReportOptions& options,
                                const std::function<void(const ReportRow&)>& visit) {
    if (!selection.rows_made_when_visited) {
        const auto ranked = ranked_rows(selection.rows, options);
        for (const ReportRow* row : ranked) visit(*row);
        return ranked.size();
    }
    // A batch's rows come out of make_rows by row number; they are visited in rank order. Each
    // batch reads every site once more, and its rows are what it holds.
    constexpr std::size_t kBatch = 1024;
    std::vector<bool> wanted(selection.assignment.row_count());
    for (std::size_t first = 0; first < selection.ranked.size(); first += kBatch) {
        const auto batch = std::span<const uint32_t>(selection.ranked)
                               .subspan(first, std::min(kBatch, selection.ranked.size() - first));
        for (const uint32_t row : batch) wanted[row] = true;
        const std::vector<ReportRow> rows = make_rows(snapshot, options.by, selection.assignment, &wanted);
        std::vector<uint32_t> by_number(batch.begin(), batch.end());
        std::sort(by_number.begin(), by_number.end());
        for (const uint32_t row : batch) {
            const auto place = std::lower_bound(by_number.begin(), by_number.end(), row) - by_number.begin();
            visit(rows[static_cast<std::size_t>(place)]);
        }
        for (const uint32_t row : batch) wanted[row] = false;
    }
    return selection.ranked.size();
}

RowSelection selected_rows(const Snapshot& snapshot, const ReportOptions& options, Symbolizer& symbolizer) {
    if (!options.site && options.focus.empty()) return ranked_selection(snapshot, options);
    RowSelection selection;
    selection.rows = report_rows(snapshot, options.by);
    selection.all_rows = selection.rows.size();
    if (options.site) {
        std::erase_if(selection.rows, [&](const ReportRow& row) { return row.id != *options.site; });
        if (selection.rows.empty())
            throw std::runtime_error("no site " + std::to_string(*options.site) +
                                     " in this report (an id is the row id that reports, watch, "
                                     "suspects and top print for the same process" +
                                     (options.by == Grouping::ruby ? ", under the same --by)" : ")"));
    } else if (!options.focus.empty()) {
        RowMatcher matcher(options.focus, symbolizer);
        selection.rows = focused_rows(snapshot, std::move(selection.rows), matcher);
    }
    selection.kept_rows = selection.rows.size();
    selection.selected = options.site.has_value() || !options.focus.empty();
    for (const ReportRow& row : selection.rows) selection.counters += row.counters;
    return selection;
}

}  // namespace leakwrap
