#include "report_bins.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>

namespace leakwrap {
namespace {

using testing::BuiltBin;
using testing::kFirstSiteSlot;
using testing::SegmentBuilder;

constexpr uint32_t kClass32 = layout::size_class_of(32);
constexpr uint32_t kClass1000 = layout::size_class_of(1000);

std::vector<uint32_t> ids(const std::vector<const ReportRow*>& rows) {
    std::vector<uint32_t> result;
    for (const ReportRow* row : rows) result.push_back(row->id);
    return result;
}

TEST(SizeClassTable, ListsTheClassesWithAllocationsSummedOverTheirShards) {
    SegmentBuilder builder;
    builder.bin_shards = 5;
    builder.bins = std::vector<BuiltBin>{
        {.size_class = kClass32, .shard = 0, .allocs = 10, .frees = 4, .alloc_bytes = 320, .free_bytes = 128},
        {.size_class = kClass32, .shard = 4, .allocs = 5, .frees = 1, .alloc_bytes = 160, .free_bytes = 32},
        {.size_class = kClass1000, .shard = 2, .allocs = 1, .alloc_bytes = 1000},
        {.size_class = layout::kSizeClassCount - 1,
         .shard = 1,
         .allocs = 1,
         .frees = 1,
         .alloc_bytes = uint64_t{1} << 41,
         .free_bytes = uint64_t{1} << 41},
    };
    const Snapshot snapshot = parse_segment(builder.build());
    const auto rows = report_rows(snapshot, Grouping::native);
    const auto table = size_class_table(snapshot, rows);

    ASSERT_EQ(table.size(), 3u);
    EXPECT_EQ(table[0].size_class, kClass32);
    EXPECT_EQ(table[0].counters.allocs, 15u);
    EXPECT_EQ(table[0].counters.frees, 5u);
    EXPECT_EQ(table[0].counters.live_blocks(), 10u);
    EXPECT_EQ(table[0].counters.live_bytes(), 320u);
    EXPECT_EQ(table[1].size_class, kClass1000);
    EXPECT_EQ(table[2].size_class, layout::kSizeClassCount - 1);
    EXPECT_EQ(table[2].counters.live_blocks(), 0u);
}

TEST(SizeClassTable, NamesTheThreeRowsWithTheMostLiveBlocksOfEachClass) {
    SegmentBuilder builder;
    builder.overflow_sites[kClass32] = {.allocs = 6, .alloc_bytes = 192};
    builder.sites = {
        {.allocs = 2, .alloc_bytes = 64, .frames = {0xa}},                                  // 88
        {.allocs = 9, .frees = 9, .alloc_bytes = 288, .free_bytes = 288, .frames = {0xb}},  // 89
        {.allocs = 6, .alloc_bytes = 192, .frames = {0xc}},                                 // 90
        {.allocs = 7, .alloc_bytes = 224, .frames = {0xd}},                                 // 91
        {.allocs = 1, .alloc_bytes = 1000, .frames = {0xa}},                                // 92, with 88
    };
    const Snapshot snapshot = parse_segment(builder.build());
    const auto rows = report_rows(snapshot, Grouping::native);
    const auto table = size_class_table(snapshot, rows);

    ASSERT_EQ(table.size(), 2u);
    // 91 (7 live), then the overflow row and 90 tied at 6 (lower id first); 88 (2) is fourth and
    // 89 has nothing live.
    EXPECT_EQ(ids(table[0].top_rows), (std::vector<uint32_t>{kFirstSiteSlot + 3, kClass32, kFirstSiteSlot + 2}));
    EXPECT_TRUE(table[0].top_rows[1]->overflow);
    // The row of stack 0xa holds blocks of both classes and ranks by those of each.
    EXPECT_EQ(ids(table[1].top_rows), (std::vector<uint32_t>{kFirstSiteSlot}));
    EXPECT_EQ(table[1].counters.allocs, 1u);
}

TEST(SizeClassTable, RanksTheRowsOfTheGroupingInUse) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 2, .alloc_bytes = 64, .frames = {0xa}, .ruby_file = "a.rb", .ruby_line = 1},
        {.allocs = 3, .alloc_bytes = 96, .frames = {0xb}},
        {.allocs = 2, .alloc_bytes = 64, .frames = {0xc}, .ruby_file = "a.rb", .ruby_line = 1},
    };
    const Snapshot snapshot = parse_segment(builder.build());
    const auto rows_by_native = report_rows(snapshot, Grouping::native);
    const auto by_native = size_class_table(snapshot, rows_by_native);
    EXPECT_EQ(ids(by_native[0].top_rows),
              (std::vector<uint32_t>{kFirstSiteSlot + 1, kFirstSiteSlot, kFirstSiteSlot + 2}));
    const auto rows_by_ruby = report_rows(snapshot, Grouping::ruby);
    const auto by_ruby = size_class_table(snapshot, rows_by_ruby);
    EXPECT_EQ(ids(by_ruby[0].top_rows), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 1}));
}

}  // namespace
}  // namespace leakwrap
