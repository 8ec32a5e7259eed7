// Live memory by age: the birth times of a snapshot's records told as time since the process
// started, the records born within a window (--born-after, --born-before), and the births of a
// row's live blocks.
#pragma once

#include "report_rows.h"
#include "segment_snapshot.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leakwrap {

// Points in time since the process started, as the user gives them.
struct BirthWindow {
    std::optional<uint64_t> after_ns;
    std::optional<uint64_t> before_ns;
    bool any() const { return after_ns || before_ns; }
};

// A snapshot's grid seen from its process's start, which lies before the grid's origin by the
// few milliseconds the process ran before its segment was made, or after it for a child made
// by fork(), which keeps its parent's grid.
class BirthTimes {
public:
    // None for a snapshot without births (a layout before 8, a tree of unrelated grids).
    static std::optional<BirthTimes> of(const Snapshot& snapshot);

    const BirthGrid& grid() const { return grid_; }
    // A time on the grid (since its origin) as time since the process started (negative: before
    // it, in a forked child, whose grid is its parent's).
    int64_t since_start_ns(uint64_t since_origin_ns) const {
        return static_cast<int64_t>(since_origin_ns) + origin_since_start_ns_;
    }
    // When a cell starts and ends, in ns since the process started (negative: before it).
    int64_t start_ns(uint32_t cell) const;
    std::optional<int64_t> end_ns(uint32_t cell) const;
    // The cell of a moment given as time since the process started.
    uint32_t cell_at(uint64_t since_start_ns) const;

private:
    BirthTimes(const BirthGrid& grid, int64_t origin_since_start_ns)
        : grid_(grid), origin_since_start_ns_(origin_since_start_ns) {}
    BirthGrid grid_;
    int64_t origin_since_start_ns_;
};

// Keeps the records born within the window: those of the cells from the one holding after_ns
// on, and before the one holding before_ns; a moment inside a cell is so taken to its start.
// Throws std::runtime_error if the snapshot has no births. Totals and bins stay the whole
// process's; snapshot.birth_selection says what was left out.
void keep_births_within(Snapshot& snapshot, const BirthWindow& window);

// The cells holding a row's live blocks, oldest first, with what each holds (estimated in
// sampling mode, as the row's counters are); empty if it holds none or the snapshot has no births.
struct CellCounters {
    uint32_t cell = 0;
    Counters counters;
};
std::vector<CellCounters> live_by_birth(const ReportRow& row, const Snapshot& snapshot);

// "4.0 s", "12 min 30 s", "3 h 5 min": a time since the start, to a precision of about 1/100.
std::string birth_time_text(int64_t since_start_ns);
// "born 4.0 s to 9.0 s", "born from 2 h 3 min" (the last cell), for the cells given.
std::string birth_span_text(const BirthTimes& times, uint32_t oldest_cell, uint32_t youngest_cell);
// The grid in words, for a report's header.
std::string birth_grid_text(const BirthGrid& grid);

}  // namespace leakwrap
