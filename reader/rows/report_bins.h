// The size-class table (--bins, and "bins" in every JSON report): the exact per-class counters of
// all blocks, each class with the report rows that hold most of its live blocks.
#pragma once

#include "report_rows.h"
#include "segment_snapshot.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leakwrap {

inline constexpr std::size_t kTopRowsPerSizeClass = 3;

struct SizeClassEntry {
    uint32_t size_class = 0;
    Counters counters;  // exact, in both modes
    // Up to kTopRowsPerSizeClass rows with live blocks of this class, most live blocks first
    // (ties: lower id first). Pointers into the rows given to size_class_table.
    std::vector<const ReportRow*> top_rows;
};

// The classes that ever had an allocation, ascending.
std::vector<SizeClassEntry> size_class_table(const Snapshot& snapshot, const std::vector<ReportRow>& rows);
// Marks in `wanted` (by row number) the rows that size_class_table puts at the top of a class,
// out of every row of the assignment: made with them, any rows give the table of every row.
void mark_size_class_top_rows(const Snapshot& snapshot, const RowAssignment& assignment, std::vector<bool>& wanted);
// The entries point into the rows, which must outlive them.
std::vector<SizeClassEntry> size_class_table(const Snapshot&, std::vector<ReportRow>&&) = delete;

}  // namespace leakwrap
