#include "report_rows.h"
#include "sampling_estimate.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>

namespace leakwrap {
namespace {

using testing::BuiltSite;
using testing::kFirstSiteSlot;
using testing::SegmentBuilder;

constexpr uint32_t kClass32 = layout::size_class_of(32);
constexpr uint32_t kClass1000 = layout::size_class_of(1000);

// Rows view the stacks of their snapshot, which must outlive them: these are kept for the whole
// test program.
std::vector<ReportRow> rows_of(const SegmentBuilder& builder, Grouping grouping) {
    static std::deque<Snapshot> snapshots;
    return report_rows(snapshots.emplace_back(parse_segment(builder.build())), grouping);
}

const ReportRow& row_with_id(const std::vector<ReportRow>& rows, uint32_t id) {
    for (const auto& row : rows)
        if (row.id == id) return row;
    throw std::out_of_range("no row " + std::to_string(id));
}

std::vector<uint32_t> ids(const std::vector<ReportRow>& rows) {
    std::vector<uint32_t> result;
    for (const auto& row : rows) result.push_back(row.id);
    return result;
}

TEST(ReportRows, MergeTheSizeClassRecordsOfOneStackIntoOneRow) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 10, .frees = 2, .alloc_bytes = 320, .free_bytes = 64, .frames = {0xa, 0xb}},
        {.allocs = 3, .frees = 1, .alloc_bytes = 3000, .free_bytes = 1000, .frames = {0xc}},
        {.allocs = 2, .frees = 0, .alloc_bytes = 2000, .frames = {0xa, 0xb}},
    };
    const auto rows = rows_of(builder, Grouping::native);
    EXPECT_EQ(ids(rows), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 1}));

    const ReportRow& merged = rows[0];
    EXPECT_FALSE(merged.overflow);
    EXPECT_FALSE(merged.estimated);
    EXPECT_EQ(std::vector<uint64_t>(merged.frames().begin(), merged.frames().end()), (std::vector<uint64_t>{0xa, 0xb}));
    EXPECT_EQ(merged.records(), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 2}));
    EXPECT_EQ(merged.counters.allocs, 12u);
    EXPECT_EQ(merged.counters.frees, 2u);
    EXPECT_EQ(merged.counters.live_bytes(), 256u + 2000u);
    ASSERT_EQ(merged.size_classes().size(), 2u);
    EXPECT_EQ(merged.size_classes()[0].size_class, kClass32);
    EXPECT_EQ(merged.size_classes()[0].counters.live_blocks(), 8u);
    EXPECT_EQ(merged.size_classes()[1].size_class, kClass1000);
    EXPECT_EQ(merged.size_classes()[1].counters.live_bytes(), 2000u);
    EXPECT_EQ(merged.in_size_class(kClass1000).allocs, 2u);
    EXPECT_EQ(merged.in_size_class(0).allocs, 0u);
}

TEST(ReportRows, KeepOneStackAtTwoRubyLocationsApart) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 1, .alloc_bytes = 32, .frames = {0xa}, .ruby_file = "app.rb", .ruby_line = 3},
        {.allocs = 1, .alloc_bytes = 32, .frames = {0xa}, .ruby_file = "app.rb", .ruby_line = 4},
        {.allocs = 1, .alloc_bytes = 1000, .frames = {0xa}, .ruby_file = "app.rb", .ruby_line = 3},
    };
    const auto rows = rows_of(builder, Grouping::native);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(*rows[0].innermost_ruby(), (RubyLocation{"app.rb", 3}));
    EXPECT_EQ(rows[0].records(), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 2}));
    EXPECT_EQ(*rows[1].innermost_ruby(), (RubyLocation{"app.rb", 4}));
}

TEST(ReportRows, ByRubyMergeEveryStackOfOneFileAndLine) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 4, .alloc_bytes = 128, .frames = {0xa}, .ruby_file = "app.rb", .ruby_line = 10},
        {.allocs = 1, .alloc_bytes = 1000, .frames = {0xb}, .ruby_file = "app.rb", .ruby_line = 10},
        {.allocs = 2, .alloc_bytes = 64, .frames = {0xa}, .ruby_file = "app.rb", .ruby_line = 11},
        {.allocs = 8, .alloc_bytes = 256, .frames = {0xc}, .ruby_file = "lib.rb", .ruby_line = 10},
        {.allocs = 5, .alloc_bytes = 160, .frames = {0xd}},
        {.allocs = 6, .alloc_bytes = 192, .frames = {0xe}},
    };
    const auto rows = rows_of(builder, Grouping::ruby);
    ASSERT_EQ(rows.size(), 4u);

    const ReportRow& line10 = row_with_id(rows, kFirstSiteSlot);
    EXPECT_EQ(*line10.innermost_ruby(), (RubyLocation{"app.rb", 10}));
    EXPECT_EQ(line10.records(), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 1}));
    EXPECT_EQ(line10.counters.allocs, 5u);
    EXPECT_EQ(line10.size_classes().size(), 2u);
    EXPECT_TRUE(line10.frames().empty()) << "a Ruby line stands for several native stacks";

    EXPECT_EQ(*row_with_id(rows, kFirstSiteSlot + 2).innermost_ruby(), (RubyLocation{"app.rb", 11}));
    EXPECT_EQ(*row_with_id(rows, kFirstSiteSlot + 3).innermost_ruby(), (RubyLocation{"lib.rb", 10}));

    const ReportRow& native_only = row_with_id(rows, kFirstSiteSlot + 4);
    EXPECT_TRUE(native_only.ruby().empty());
    EXPECT_FALSE(native_only.overflow);
    EXPECT_EQ(native_only.records(), (std::vector<uint32_t>{kFirstSiteSlot + 4, kFirstSiteSlot + 5}));
    EXPECT_EQ(native_only.counters.allocs, 11u);
}

TEST(ReportRows, MergeTheOverflowSitesOfAllClassesIntoOneRow) {
    SegmentBuilder builder;
    builder.overflow_sites[kClass32] = {.allocs = 3, .frees = 1, .alloc_bytes = 96, .free_bytes = 32};
    builder.overflow_sites[kClass1000] = {.allocs = 1, .alloc_bytes = 1000};
    builder.sites = {{.allocs = 1, .alloc_bytes = 8}};
    for (const Grouping grouping : {Grouping::native, Grouping::ruby}) {
        const auto rows = rows_of(builder, grouping);
        ASSERT_EQ(rows.size(), 2u);
        const ReportRow& overflow = rows[0];
        EXPECT_TRUE(overflow.overflow);
        EXPECT_EQ(overflow.id, kClass32);
        EXPECT_EQ(overflow.records(), (std::vector<uint32_t>{kClass32, kClass1000}));
        EXPECT_EQ(overflow.counters.live_blocks(), 3u);
        EXPECT_EQ(overflow.counters.live_bytes(), 1064u);
        EXPECT_EQ(overflow.size_classes().size(), 2u);
        EXPECT_TRUE(overflow.frames().empty());
        EXPECT_TRUE(overflow.ruby().empty());
        EXPECT_FALSE(rows[1].overflow);
    }
}

TEST(ReportRows, LeaveOutTheOverflowRowUntilItCountsAnAllocation) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 1, .alloc_bytes = 8}};
    EXPECT_EQ(ids(rows_of(builder, Grouping::native)), (std::vector<uint32_t>{kFirstSiteSlot}));
    EXPECT_EQ(ids(rows_of(builder, Grouping::ruby)), (std::vector<uint32_t>{kFirstSiteSlot}));
}

// The example of the layout's contract: 10 sampled 1000-byte blocks, a 512 KiB mean interval.
TEST(ReportRows, ScaleSampledRecordsToEstimatesBeforeMergingThem) {
    constexpr uint64_t kInterval = 512 * 1024;
    SegmentBuilder builder;
    builder.sample_interval = kInterval;
    builder.sites = {
        {.allocs = 10, .frees = 4, .alloc_bytes = 10000, .free_bytes = 4000, .frames = {0xa}},
        {.allocs = 2, .alloc_bytes = 2 * 400000, .frames = {0xa}},
    };
    const auto rows = rows_of(builder, Grouping::native);
    ASSERT_EQ(rows.size(), 1u);
    const ReportRow& row = rows[0];
    EXPECT_TRUE(row.estimated);

    const double p_small = 1 - std::exp(-1000.0 / kInterval);
    const double p_large = 1 - std::exp(-400000.0 / kInterval);
    const auto small = row.in_size_class(kClass1000);
    EXPECT_EQ(small.allocs, static_cast<uint64_t>(std::llround(10 / p_small)));
    EXPECT_EQ(small.alloc_bytes, static_cast<uint64_t>(std::llround(10000 / p_small)));
    EXPECT_EQ(small.frees, static_cast<uint64_t>(std::llround(4 / p_small)));
    EXPECT_EQ(small.free_bytes, static_cast<uint64_t>(std::llround(4000 / p_small)));
    // Not the same as scaling the merged counters by their average block size.
    EXPECT_EQ(row.counters.allocs,
              static_cast<uint64_t>(std::llround(10 / p_small)) + static_cast<uint64_t>(std::llround(2 / p_large)));
    EXPECT_EQ(row.counters.live_blocks(), row.counters.allocs - small.frees);
}

TEST(ReportRows, ExactModeCountsAreNotEstimates) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 10, .alloc_bytes = 10000, .frames = {0xa}}};
    const auto rows = rows_of(builder, Grouping::native);
    EXPECT_FALSE(rows[0].estimated);
    EXPECT_EQ(rows[0].counters.allocs, 10u);
}

TEST(SamplingEstimate, DividesEachSideByTheChanceOfSamplingItsAverageBlock) {
    EXPECT_EQ(sampling_probability(1000, 0), 1.0);
    EXPECT_NEAR(sampling_probability(1000, 512 * 1024), 1 - std::exp(-1000.0 / (512 * 1024)), 1e-15);
    EXPECT_NEAR(sampling_probability(1e12, 512 * 1024), 1.0, 1e-12);

    const Counters sampled{.allocs = 3, .frees = 0, .alloc_bytes = 3 << 20, .free_bytes = 0};
    const Counters estimate = estimated_counters(sampled, 512 * 1024);
    EXPECT_EQ(estimate.allocs, 3u);  // 1 MiB blocks at a 512 KiB interval: 3 / 0.865 = 3.47
    EXPECT_EQ(estimate.frees, 0u);
    EXPECT_EQ(estimated_counters(sampled, 0).alloc_bytes, 3u << 20);
}

TEST(SamplingEstimate, PinsImpossibleEstimatesInsteadOfWrapping) {
    const Counters corrupt{.allocs = UINT64_MAX, .frees = 0, .alloc_bytes = UINT64_MAX};
    const Counters estimate = estimated_counters(corrupt, UINT64_MAX);
    EXPECT_EQ(estimate.allocs, UINT64_MAX);
    EXPECT_EQ(estimate.alloc_bytes, UINT64_MAX);
    Counters sum = estimate;
    sum += estimate;
    EXPECT_EQ(sum.allocs, UINT64_MAX);
}

}  // namespace
}  // namespace leakwrap
