#include "report_bins.h"

#include "sampling_estimate.h"

#include <algorithm>
#include <tuple>

namespace leakwrap {
namespace {

uint64_t live_blocks_in_class(const ReportRow& row, uint32_t size_class) {
    return row.in_size_class(size_class).live_blocks();
}

// Most live blocks of the class first, ties by the lower id.
bool holds_more_of_class(uint64_t a_blocks, uint32_t a_id, uint64_t b_blocks, uint32_t b_id) {
    return std::make_tuple(a_blocks, b_id) > std::make_tuple(b_blocks, a_id);
}

std::vector<const ReportRow*> top_rows_of_class(const std::vector<ReportRow>& rows, uint32_t size_class) {
    std::vector<const ReportRow*> holders;
    for (const ReportRow& row : rows)
        if (live_blocks_in_class(row, size_class) > 0) holders.push_back(&row);
    const auto ranks_before = [size_class](const ReportRow* a, const ReportRow* b) {
        return holds_more_of_class(live_blocks_in_class(*a, size_class), a->id, live_blocks_in_class(*b, size_class),
                                   b->id);
    };
    const std::size_t shown = std::min(kTopRowsPerSizeClass, holders.size());
    std::partial_sort(holders.begin(), holders.begin() + shown, holders.end(), ranks_before);
    holders.resize(shown);
    return holders;
}

}  // namespace

std::vector<SizeClassEntry> size_class_table(const Snapshot& snapshot, const std::vector<ReportRow>& rows) {
    std::vector<SizeClassEntry> table;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class) {
        const Counters& bin = snapshot.bins[size_class];
        if (bin.allocs == 0) continue;
        table.push_back({size_class, bin, top_rows_of_class(rows, size_class)});
    }
    return table;
}

void mark_size_class_top_rows(const Snapshot& snapshot, const RowAssignment& assignment, std::vector<bool>& wanted) {
    // The records in rows, by class and then row, so that each (row, class) share is one run.
    std::vector<uint32_t> records;
    for (uint32_t position = 0; position < snapshot.sites.size(); ++position)
        if (assignment.row_of_site[position] != RowAssignment::kNoRow) records.push_back(position);
    const auto key = [&](uint32_t position) {
        return std::make_pair(snapshot.sites[position].size_class(), assignment.row_of_site[position]);
    };
    // Ties by position: each share is summed in slot order, as ReportRow::in_size_class sums it.
    std::sort(records.begin(), records.end(),
              [&](uint32_t a, uint32_t b) { return std::make_pair(key(a), a) < std::make_pair(key(b), b); });

    struct Holder {
        uint64_t blocks;
        uint32_t row;
    };
    std::vector<Holder> top;  // of the class being scanned, best first
    for (std::size_t run = 0; run < records.size();) {
        const auto [size_class, row] = key(records[run]);
        Counters share;
        for (; run < records.size() && key(records[run]) == std::make_pair(size_class, row); ++run)
            share += estimated_counters(snapshot.sites[records[run]].counters(), snapshot.sample_interval);
        if (const uint64_t blocks = share.live_blocks(); blocks > 0) {
            const Holder holder{blocks, row};
            const auto at = std::find_if(top.begin(), top.end(), [&](const Holder& other) {
                // Row numbers rank as the rows' ids do (see RowAssignment).
                return holds_more_of_class(blocks, row, other.blocks, other.row);
            });
            top.insert(at, holder);
            if (top.size() > kTopRowsPerSizeClass) top.pop_back();
        }
        if (run == records.size() || snapshot.sites[records[run]].size_class() != size_class) {
            for (const Holder& holder : top) wanted[holder.row] = true;
            top.clear();
        }
    }
}

}  // namespace leakwrap
