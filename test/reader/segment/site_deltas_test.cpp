// The parser and the site delta table: a site's counts are its record's plus every delta entry
// naming it, whatever the shard, however wide the counts.
#include "report_rows.h"
#include "sample_segments.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace leakwrap {
namespace {

using namespace testing;

// Counts in a delta entry make a record that alone looks impossible whole again.
TEST(ParseSegment, FlagsNothingWhenTheDeltasMakeTheCountsAddUp) {
    SegmentBuilder builder;
    builder.sites = {{.frees = 2, .free_bytes = 20, .frames = {0x1001}}};
    builder.deltas = {{.shard = 1, .site = kFirst, .allocs = 3, .alloc_bytes = 30}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.impossible_sites, 0u);
    EXPECT_FALSE(impossible_counts_warning(snapshot));
    EXPECT_FALSE(impossible_counts_warning(parse_segment(typical_builder().build())));
}

// A writer thread counts in its own shard's delta entries and moves them into the record now
// and then: a site's counts are its record's plus every entry naming it, in any shard.
TEST(ParseSegment, AddsEverySiteDeltaToTheSiteItNames) {
    auto builder = typical_builder();
    builder.deltas = {
        {.shard = 0, .site = kFirst, .allocs = 2, .alloc_bytes = 200},
        {.shard = 2, .site = kFirst, .allocs = 1, .frees = 3, .alloc_bytes = 100, .free_bytes = 300},
        // The reader goes by the site an entry names, not by where the entry lies.
        {.shard = 1, .site = kFirst, .allocs = 4, .alloc_bytes = 400, .slot = 1},
        {.shard = 1, .site = kClassOf100, .allocs = 1, .alloc_bytes = 100},
    };
    const auto snapshot = parse_segment(builder.build());

    const Counters first = site_in_slot(snapshot, kFirst).counters();
    EXPECT_EQ(first.allocs, 10u + 2 + 1 + 4);
    EXPECT_EQ(first.frees, 4u + 3);
    EXPECT_EQ(first.alloc_bytes, 1000u + 200 + 100 + 400);
    EXPECT_EQ(first.free_bytes, 400u + 300);
    EXPECT_EQ(first.live_blocks(), 10u);
    EXPECT_EQ(first.live_bytes(), 1000u);
    const Counters overflow = site_in_slot(snapshot, kClassOf100).counters();
    EXPECT_EQ(overflow.allocs, 3u + 1);
    EXPECT_EQ(overflow.live_bytes(), 300u);
    const Counters second = site_in_slot(snapshot, kFirst + 1).counters();
    EXPECT_EQ(second.allocs, 5u);
    EXPECT_EQ(second.frees, 5u);
    // The builder counted the deltas in the bins too, as the writer does.
    EXPECT_EQ(snapshot.bins[kClassOf100].allocs, 13u + 8);
    EXPECT_EQ(snapshot.totals.live_bytes(), 300u + 1000u);
}

TEST(ParseSegment, IgnoresEmptyDeltaEntries) {
    auto builder = typical_builder();
    // What an entry holds while its owner moves it into the record: nothing, whatever it says.
    builder.deltas = {{.shard = 1,
                       .site = layout::kNoDeltaSite,
                       .allocs = UINT64_MAX,
                       .frees = 7,
                       .alloc_bytes = UINT64_MAX,
                       .slot = 0}};
    const auto snapshot = parse_segment(builder.build());
    const auto expected = parse_segment(typical_builder().build());
    ASSERT_EQ(snapshot.sites.size(), expected.sites.size());
    for (std::size_t i = 0; i < snapshot.sites.size(); ++i) {
        EXPECT_EQ(snapshot.sites[i].counters().allocs, expected.sites[i].counters().allocs) << i;
        EXPECT_EQ(snapshot.sites[i].counters().frees, expected.sites[i].counters().frees) << i;
    }
}

// A live writer may claim a site and count in a delta entry for it after the reader copied
// sites_claimed, or count before the record is published: the entry is ignored like the slot.
TEST(ParseSegment, IgnoresDeltasNamingSlotsWithoutAReadySite) {
    auto builder = typical_builder();
    builder.sites.push_back({.allocs = 1, .alloc_bytes = 8, .state = layout::kAbandoned});
    builder.sites.push_back({.state = layout::kEmpty});
    const uint32_t abandoned = kFirst + 2, unpublished = kFirst + 3;
    const uint32_t unclaimed = kFirst + 6;  // within the capacity, beyond sites_claimed
    builder.deltas = {
        {.shard = 0, .site = abandoned, .allocs = UINT64_MAX, .alloc_bytes = UINT64_MAX},
        {.shard = 0, .site = unpublished, .allocs = UINT64_MAX, .frees = 1},
        {.shard = 1, .site = unclaimed, .allocs = UINT64_MAX, .alloc_bytes = 5},
        {.shard = 2, .site = builder.site_capacity + 1000, .frees = UINT64_MAX, .slot = 0},
        {.shard = 2, .site = layout::kNoDeltaSite - 1, .allocs = 9, .slot = 1},
        {.shard = 2, .site = kFirst + 1, .allocs = 1, .frees = 1, .alloc_bytes = 10, .free_bytes = 10, .slot = 2},
    };
    builder.bins = std::vector<testing::BuiltBin>{};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.sites.size(), kFirst + 2);
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().allocs, 10u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst + 1).counters().allocs, 6u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst + 1).counters().frees, 6u);
}

TEST(ParseSegment, RejectsASiteDeltaThatOverflowsItsSite) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = UINT64_MAX - 1, .alloc_bytes = 8}};
    builder.deltas = {{.shard = 1, .site = kFirst, .frees = 1}, {.shard = 2, .site = kFirst, .allocs = 2}};
    builder.bins = std::vector<testing::BuiltBin>{};
    // kFirst & 3 is 0: the second delta lies in entry 2 * 4 + 0 of the table.
    EXPECT_EQ(parse_error(builder.build()), "site 88 allocations overflow 64 bits with delta entry 8 added");
}

// Frees in one thread's delta of blocks whose allocations are in the record (or in another
// thread's delta): only the sum of all of them is the site's count.
TEST(ParseSegment, CountsLiveBlocksAcrossTheRecordAndItsDeltas) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 5, .alloc_bytes = 500, .frames = {0x1001}, .size_class = kClassOf100},
        {.frees = 3, .free_bytes = 30, .frames = {0x1002}, .size_class = kClassOf10},
        // Its allocations were on their way from a delta into the record when the copy was made.
        {.frees = 2, .free_bytes = 200, .frames = {0x1003}, .size_class = kClassOf100},
    };
    builder.deltas = {{.shard = 1, .site = kFirst, .frees = 3, .free_bytes = 300},
                      {.shard = 0, .site = kFirst + 1, .allocs = 4, .alloc_bytes = 40},
                      {.shard = 2, .site = kFirst + 2, .frees = 1, .free_bytes = 100}};
    const auto snapshot = parse_segment(builder.build());

    const Counters record_allocs = site_in_slot(snapshot, kFirst).counters();
    EXPECT_EQ(record_allocs.live_blocks(), 2u);
    EXPECT_EQ(record_allocs.live_bytes(), 200u);
    const Counters delta_allocs = site_in_slot(snapshot, kFirst + 1).counters();
    EXPECT_EQ(delta_allocs.live_blocks(), 1u);
    EXPECT_EQ(delta_allocs.live_bytes(), 10u);
    const Counters in_transit = site_in_slot(snapshot, kFirst + 2).counters();
    EXPECT_EQ(in_transit.frees, 3u);
    EXPECT_EQ(in_transit.live_blocks(), 0u);
    EXPECT_EQ(in_transit.live_bytes(), 0u);

    // The rows see the sums too.
    std::map<uint32_t, Counters> row_counters;
    for (const ReportRow& row : report_rows(snapshot, Grouping::native)) row_counters[row.id] = row.counters;
    ASSERT_EQ(row_counters.size(), 3u);
    EXPECT_EQ(row_counters[kFirst].live_bytes(), 200u);
    EXPECT_EQ(row_counters[kFirst + 1].live_blocks(), 1u);
    EXPECT_EQ(row_counters[kFirst + 2].live_blocks(), 0u);
    EXPECT_EQ(row_counters[kFirst + 2].live_bytes(), 0u);
}

TEST(ParseSegment, IgnoresTheDeltaOffsetWithoutADeltaTable) {
    auto builder = typical_builder();
    builder.site_delta_slots = 0;
    auto bytes = builder.build();
    patch_header(bytes, [](layout::Header& h) { h.site_deltas_offset = ~0ull - 8; });
    EXPECT_EQ(parse_error(bytes), "");
    EXPECT_EQ(site_in_slot(parse_segment(bytes), kFirst).counters().allocs, 10u);
}

TEST(ParseSegment, AcceptsTheLargestDeltaTable) {
    SegmentBuilder builder;
    builder.bin_shards = 2;
    builder.site_delta_slots = 4096;
    builder.sites = {{.allocs = 1, .alloc_bytes = 8}};
    builder.deltas = {{.shard = 1, .site = kFirst, .allocs = 1, .alloc_bytes = 8, .slot = 4095}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().allocs, 2u);
}

// The reader keeps a site's counts in 32 bits each while they fit, apart once one does not: counts
// beyond 32 bits come out whole, from the record or from a delta that carries the site over, and
// through copies and moves of the sites.
TEST(ParseSegment, KeepsCountsBeyondThirtyTwoBitsWhole) {
    constexpr uint64_t kMany = (uint64_t{5} << 32) + 7;
    constexpr uint64_t kNarrowest = std::numeric_limits<uint32_t>::max();
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = kMany, .frees = 1, .alloc_bytes = kMany * 64, .free_bytes = 64, .frames = {0x1001}},
        {.allocs = kNarrowest, .alloc_bytes = kNarrowest, .frames = {0x1002}, .size_class = kClassOf10},
        {.allocs = 3, .frees = 1, .alloc_bytes = 300, .free_bytes = 100, .frames = {0x1003}},
    };
    builder.deltas = {{.shard = 0, .site = kFirst + 1, .allocs = 1, .alloc_bytes = 1}};
    const Snapshot snapshot = parse_segment(builder.build());
    const std::vector<Counters> expected = {
        {kMany, 1, kMany * 64, 64},
        {kNarrowest + 1, 0, kNarrowest + 1, 0},
        {3, 1, 300, 100},
    };
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(site_in_slot(snapshot, kFirst + static_cast<uint32_t>(i)).counters(), expected[i]) << i;

    std::vector<Site> copied = snapshot.sites;
    const std::vector<Site> moved = std::move(copied);
    ASSERT_EQ(moved.size(), snapshot.sites.size());
    for (std::size_t i = 0; i < moved.size(); ++i) {
        EXPECT_EQ(moved[i].counters(), snapshot.sites[i].counters()) << i;
        EXPECT_EQ(moved[i].id, snapshot.sites[i].id) << i;
        EXPECT_EQ(moved[i].stack(), snapshot.sites[i].stack()) << i;
    }
    Site assigned = site_in_slot(snapshot, kFirst);
    EXPECT_EQ(assigned.counters(), expected[0]);
    assigned = site_in_slot(snapshot, kFirst + 2);  // wide to narrow
    EXPECT_EQ(assigned.counters(), expected[2]);
    assigned.set_counters(expected[1]);  // narrow to wide
    EXPECT_EQ(assigned.counters(), expected[1]);
}

// 75k sites and a full table of 64 shards x 64 entries, every entry in use, as a busy writer
// leaves them: each entry is looked up once, so this stays quick.
TEST(ParseSegment, AddsTheDeltasOfAFullTableToManySites) {
    SegmentBuilder builder;
    builder.max_depth = 1;
    builder.site_capacity = kFirst + 75000;
    builder.sites.resize(75000, {.allocs = 1, .alloc_bytes = 16, .frames = {0x1000}});
    builder.bin_shards = 64;
    builder.site_delta_slots = 64;
    for (uint32_t shard = 0; shard < 64; ++shard)
        for (uint32_t slot = 0; slot < 64; ++slot)
            builder.deltas.push_back({.shard = shard,
                                      .site = kFirst + (shard * 1171 + slot) * 17 % 75000,
                                      .allocs = 1,
                                      .frees = 1,
                                      .alloc_bytes = 16,
                                      .free_bytes = 16,
                                      .slot = slot});
    const auto snapshot = parse_segment(builder.build());
    uint64_t allocs = 0, frees = 0;
    for (const Site& site : snapshot.sites) {
        allocs += site.counters().allocs;
        frees += site.counters().frees;
    }
    EXPECT_EQ(allocs, 75000u + 64 * 64);
    EXPECT_EQ(frees, 64u * 64);
    EXPECT_EQ(snapshot.totals.allocs, allocs);
}

}  // namespace
}  // namespace leakwrap
