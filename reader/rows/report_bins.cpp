#include "report_bins.h"

#include <algorithm>
#include <tuple>

namespace leakwrap {
namespace {

uint64_t live_blocks_in_class(const ReportRow& row, uint32_t size_class) {
    return row.in_size_class(size_class).live_blocks();
}

std::vector<const ReportRow*> top_rows_of_class(const std::vector<ReportRow>& rows,
                                                uint32_t size_class) {
    std::vector<const ReportRow*> holders;
    for (const ReportRow& row : rows)
        if (live_blocks_in_class(row, size_class) > 0) holders.push_back(&row);
    const auto ranks_before = [size_class](const ReportRow* a, const ReportRow* b) {
        return std::make_tuple(live_blocks_in_class(*a, size_class), b->id) >
               std::make_tuple(live_blocks_in_class(*b, size_class), a->id);
    };
    const std::size_t shown = std::min(kTopRowsPerSizeClass, holders.size());
    std::partial_sort(holders.begin(), holders.begin() + shown, holders.end(), ranks_before);
    holders.resize(shown);
    return holders;
}

}  // namespace

std::vector<SizeClassEntry> size_class_table(const Snapshot& snapshot,
                                             const std::vector<ReportRow>& rows) {
    std::vector<SizeClassEntry> table;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class) {
        const Counters& bin = snapshot.bins[size_class];
        if (bin.allocs == 0) continue;
        table.push_back({size_class, bin, top_rows_of_class(rows, size_class)});
    }
    return table;
}

}  // namespace leakwrap
