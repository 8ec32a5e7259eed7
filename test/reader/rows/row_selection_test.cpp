#include "report_bins.h"
#include "report_rows.h"
#include "row_selection.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>

namespace leakwrap {
namespace {

using testing::SegmentBuilder;

// Sites that share stacks across size classes and Ruby lines across stacks, with ties in every
// sort key, empty records and an overflow site that counted.
SegmentBuilder crowded_segment(uint64_t sample_interval) {
    SegmentBuilder builder;
    builder.sample_interval = sample_interval;
    builder.site_capacity = testing::kFirstSiteSlot + 12000;
    std::mt19937_64 random(7);
    const auto pick = [&](uint64_t below) { return random() % below; };
    // More rows than for_each_ranked_row makes at once (4096).
    for (int i = 0; i < 12000; ++i) {
        const uint64_t allocs = pick(4) == 0 ? 0 : 1 + pick(2);
        const uint64_t frees = allocs == 0 ? 0 : pick(allocs + 1);
        const uint64_t block = uint64_t{16} << pick(2);
        const bool ruby = pick(3) != 0;
        builder.sites.push_back({.allocs = allocs,
                                 .frees = frees,
                                 .alloc_bytes = allocs * block,
                                 .free_bytes = frees * block,
                                 .frames = {0x1000 + pick(6000), 0x2000 + pick(2)},
                                 .ruby_file = ruby ? "app/file" + std::to_string(pick(5)) + ".rb" : "",
                                 .ruby_line = ruby ? static_cast<uint32_t>(1 + pick(3)) : 0});
    }
    builder.overflow_sites[layout::size_class_of(64)] = {.allocs = 3, .alloc_bytes = 192};
    return builder;
}

using Ranked = std::vector<std::tuple<uint32_t, Counters, std::vector<uint32_t>>>;
using ClassTops = std::vector<std::pair<uint32_t, std::vector<uint32_t>>>;

ClassTops class_tops_of(const Snapshot& snapshot, const std::vector<ReportRow>& rows) {
    ClassTops tops;
    for (const SizeClassEntry& entry : size_class_table(snapshot, rows)) {
        std::vector<uint32_t> ids;
        for (const ReportRow* row : entry.top_rows) ids.push_back(row->id);
        tops.emplace_back(entry.size_class, ids);
    }
    return tops;
}

Ranked ranked_of(const std::vector<const ReportRow*>& rows) {
    Ranked ranked;
    for (const ReportRow* row : rows) ranked.emplace_back(row->id, row->counters, row->records());
    return ranked;
}

// Reports make only the rows they show and those the size-class table names; what they show
// must be what every row, made at once and ranked, shows.
TEST(RowSelection, ShowsWhatEveryRowMadeAtOnceWouldInTheSameOrder) {
    for (const uint64_t interval : {uint64_t{0}, uint64_t{4096}}) {
        const Snapshot snapshot = parse_segment(crowded_segment(interval).build());
        Symbolizer symbolizer(snapshot.modules, {});
        for (const Grouping by : {Grouping::native, Grouping::ruby}) {
            const std::vector<ReportRow> every = report_rows(snapshot, by);
            ASSERT_GT(every.size(), 10u);  // so that --top 7 leaves rows out
            Counters every_counters;
            for (const ReportRow& row : every) every_counters += row.counters;
            for (const SortKey sort : {SortKey::live, SortKey::allocs, SortKey::bytes})
                for (const std::size_t top : {std::size_t{0}, std::size_t{1}, std::size_t{7}})
                    for (const uint64_t min_live_bytes : {uint64_t{0}, uint64_t{100}}) {
                        const ReportOptions options{
                            .top = top, .sort = sort, .by = by, .min_live_bytes = min_live_bytes};
                        SCOPED_TRACE(::testing::Message() << "interval " << interval << " by " << grouping_name(by)
                                                          << " top " << top << " min " << min_live_bytes);
                        const RowSelection selection = selected_rows(snapshot, options, symbolizer);
                        std::vector<const ReportRow*> visited_rows;
                        std::vector<ReportRow> visited_copies;
                        visited_copies.reserve(every.size());
                        const std::size_t visited = for_each_ranked_row(
                            snapshot, selection, options,
                            [&](const ReportRow& row) { visited_rows.push_back(&visited_copies.emplace_back(row)); });
                        EXPECT_EQ(visited, visited_rows.size());
                        EXPECT_EQ(ranked_of(visited_rows), ranked_of(ranked_rows(every, options)));
                        EXPECT_EQ(class_tops_of(snapshot, selection.rows), class_tops_of(snapshot, every));
                        EXPECT_EQ(selection.kept_rows, every.size());
                        EXPECT_EQ(selection.all_rows, every.size());
                        EXPECT_EQ(selection.counters, every_counters);
                        // Made at once: the size-class table's rows only.
                        EXPECT_LE(selection.rows.size(),
                                  kTopRowsPerSizeClass * size_class_table(snapshot, every).size());
                    }
        }
    }
}

}  // namespace
}  // namespace leakwrap
