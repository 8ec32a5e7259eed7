// Report rows: what one entry of a report stands for. The writer keeps one site record per
// (native stack, Ruby location, size class); a reader wants one row per call site, with its size
// classes as a breakdown (--by native), or one row per Ruby source line (--by ruby).
#pragma once

#include "segment_snapshot.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class Grouping : uint8_t {
    native,  // one row per (native stack, Ruby backtrace)
    ruby,    // one row per innermost Ruby file:line, whatever the stacks; one for "no Ruby frame"
};

std::optional<Grouping> grouping_from_name(std::string_view name);
std::string_view grouping_name(Grouping grouping);  // "native", "ruby"

// Live bytes (or blocks) summed over records as the differences of what each allocated and freed,
// modulo 2^64 and read as signed (a process's counts stay far below 2^63, and a sum caught in a
// live copy's race reads as 0): 8 bytes where summing the records' Counters takes 32, for sums
// kept for every row of a process.
class LiveSum {
public:
    void add(uint64_t allocated, uint64_t freed) { sum_ += allocated - freed; }
    uint64_t value() const { return static_cast<int64_t>(sum_) > 0 ? sum_ : 0; }

private:
    uint64_t sum_ = 0;
};

struct SizeClassCounters {
    uint32_t size_class = 0;
    Counters counters;
};

// The records of the rows of one report_rows call, grouped by row, each row's in ascending id
// order: views of the snapshot's sites.
struct RowRecords {
    std::vector<const Site*> sites;
    uint64_t sample_interval = 0;  // the snapshot's: records are estimated as they are merged
};

struct ReportRow {
    uint32_t id = 0;  // the smallest record id: short, and stable for as long as the process runs
    // The overflow sites of all size classes, merged: allocations from stacks that found the site
    // table full.
    bool overflow = false;
    bool estimated = false;  // sampling mode: the counters are estimates, not counts
    bool reduced = false;    // the writer kept only the innermost frames of a record (tables nearly full)
    Grouping by = Grouping::native;
    Counters counters;  // summed over the records
    // The merged records, ascending by id, and what keeps their list; never empty. Their ids and
    // the size classes are worked out from them when asked for, not kept in vectors of every
    // row's own for a report that prints a few. The stack too is the first record's, read when
    // asked for: 72 bytes a row, not 112.
    std::span<const Site* const> record_sites;
    std::shared_ptr<const RowRecords> record_table;

    // The stack of the row's first record, a view into the snapshot's stacks, which must outlive
    // the row; empty for the overflow row and under --by ruby.
    NativeFrames frames() const { return by == Grouping::native ? record_sites.front()->frames() : NativeFrames(); }
    uint32_t module_generation() const { return record_sites.front()->module_generation(); }
    // The Ruby backtrace of the row's first record, innermost first; under --by ruby only the
    // innermost frame, which is the row's key.
    RubyBacktrace ruby() const;
    const RubyLocation* innermost_ruby() const {
        const auto ruby = record_sites.front()->ruby();
        return ruby.empty() ? nullptr : &ruby.front();
    }

    // The ids of the merged records, ascending.
    std::vector<uint32_t> records() const;
    // The row's size classes, ascending by class, each summed over its records.
    std::vector<SizeClassCounters> size_classes() const;
    // The row's share of one size class; zero if it has no blocks there.
    Counters in_size_class(uint32_t size_class) const;
};
// What the comment above says a row costs; rows are made for every call site of a process.
static_assert(sizeof(ReportRow) == 72);

// Which row each of the snapshot's records joins, by its position in snapshot.sites (kNoRow for
// a record in none: an unused overflow site, an empty record, one `kept` leaves out), rows being
// numbered in the order of their first records; and how many records each row has. The records
// are in slot order, ids ascending, so rows are numbered in the order of their ids too: a ranking
// breaks ties by row number, with no table of every row's id.
struct RowAssignment {
    static constexpr uint32_t kNoRow = UINT32_MAX;
    std::vector<uint32_t> row_of_site;
    std::vector<uint32_t> records_of_row;
    std::size_t row_count() const { return records_of_row.size(); }
};
RowAssignment assign_rows(const Snapshot& snapshot, Grouping grouping, const std::vector<bool>* kept = nullptr);

// The rows of an assignment, ordered by id; with `wanted` (by row number), only those it marks,
// their records alone listed.
std::vector<ReportRow> make_rows(const Snapshot& snapshot, Grouping grouping, const RowAssignment& assignment,
                                 const std::vector<bool>* wanted = nullptr);

// Every row of the snapshot, ordered by id; with `kept`, made only of the records it marks (by
// position in snapshot.sites). In sampling mode each record is scaled to its estimate before it
// is merged, since the scale depends on the record's block size. The overflow row is left out
// while no allocation reached it.
std::vector<ReportRow> report_rows(const Snapshot& snapshot, Grouping grouping,
                                   const std::vector<bool>* kept = nullptr);

}  // namespace leakwrap
