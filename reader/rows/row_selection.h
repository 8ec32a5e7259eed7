// Which rows a report is about, before any ranking: every row, the rows that --focus and
// --ignore keep, or the one row --site names. Totals stay the whole process's; the selection
// says how much of it the rows kept hold.
#pragma once

#include "focus_patterns.h"
#include "report_options.h"
#include "report_rows.h"
#include "symbolizer.h"

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

namespace leakwrap {

// Whether a row has a frame the patterns match: a native frame's function (demangled, in full),
// source file (as DWARF gives it) or module path, or a Ruby frame's "file:line". Verdicts are
// kept per resolved frame, which many rows share.
class RowMatcher {
public:
    RowMatcher(const FocusPatterns& patterns, Symbolizer& symbolizer) : patterns_(patterns), symbolizer_(symbolizer) {}

    bool keeps(const ReportRow& row);

private:
    FocusVerdict native_verdict(const ResolvedFrame& frame);

    const FocusPatterns& patterns_;
    Symbolizer& symbolizer_;
    std::unordered_map<const ResolvedFrame*, FocusVerdict> native_;
    std::unordered_map<std::string, FocusVerdict> ruby_;
};

// The rows that hold what the matcher keeps, of the grouping `rows` were made with (all of a
// snapshot's). A native row is kept or not as a whole. A Ruby line stands for many stacks and
// shows none of them, so under --by ruby the patterns are matched against each record's own stack,
// its native frames and whole Ruby backtrace, and the rows are made anew of the records kept:
// `--by ruby --focus nokogiri` gives the Ruby lines whose allocations went through nokogiri, each
// with those allocations only.
// A row made of one record, standing for the row it is the first record of wherever only what
// the row stands for matters (its stack, or under --by ruby its Ruby line: a key, a focus
// verdict), which the records of a row share. It views the record, which must outlive it.
class FirstRecordRow {
public:
    FirstRecordRow(const Site& site, Grouping by) : record_(&site) {
        row_.id = site.id;
        row_.overflow = site.overflow();
        row_.reduced = site.reduced();
        row_.by = by;
        row_.record_sites = std::span<const Site* const>(&record_, 1);
    }
    FirstRecordRow(const FirstRecordRow&) = delete;
    FirstRecordRow& operator=(const FirstRecordRow&) = delete;
    const ReportRow& row() const { return row_; }

private:
    const Site* record_;
    ReportRow row_;
};

// Which of the snapshot's records (by position) belong to a native row the matcher keeps: those a
// Ruby line keeps under --focus. A native row is matched by its first record.
std::vector<bool> records_of_kept_native_rows(const Snapshot& snapshot, RowMatcher& matcher);

std::vector<ReportRow> focused_rows(const Snapshot& snapshot, std::vector<ReportRow> rows, RowMatcher& matcher);

struct RowSelection {
    // Ordered by id, as report_rows gives them: every row kept, or with rows_made_when_visited,
    // only those size_class_table names.
    std::vector<ReportRow> rows;
    std::size_t all_rows = 0;   // before --focus, --ignore or --site
    std::size_t kept_rows = 0;  // after them
    bool selected = false;      // whether any of them was given
    Counters counters;          // summed over the rows kept
    // The rows shown are made by for_each_ranked_row, from these: which row each record joins,
    // and the numbers of the rows shown, in rank order.
    bool rows_made_when_visited = false;
    RowAssignment assignment;
    std::vector<uint32_t> ranked;
};

// report_rows, then --site (throws std::runtime_error when no row has that id) or --focus and
// --ignore. Those symbolize every row's frames; without them nothing is resolved here, and rows
// are only counted and ranked, those of size_class_table alone made, since every row of a large
// process made at once costs 72 bytes a row and a pointer a record.
// Either way for_each_ranked_row and size_class_table of the result give what they give of
// every row kept.
RowSelection selected_rows(const Snapshot& snapshot, const ReportOptions& options, Symbolizer& symbolizer);

// Hands `visit` the rows ranked_rows would give of every row kept, in that order, made a few
// thousand at a time; a row lives for its visit only. `options` are those selected_rows was
// given. Returns how many were visited.
std::size_t for_each_ranked_row(const Snapshot& snapshot, const RowSelection& selection, const ReportOptions& options,
                                const std::function<void(const ReportRow&)>& visit);

}  // namespace leakwrap
