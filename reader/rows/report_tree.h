// What each process of a merged process tree (--children) holds of a report row.
#pragma once

#include "report_rows.h"

#include <cstdint>
#include <vector>

namespace leakwrap {

struct ProcessShare {
    int32_t pid = 0;
    Counters counters;  // estimated like the row in sampling mode
};

// The row's counters split by the process each of its records came from, in the order of
// snapshot.members; empty for a snapshot of one process.
std::vector<ProcessShare> row_split_by_process(const ReportRow& row, const Snapshot& snapshot);

}  // namespace leakwrap
