// The allocator's own count as the reader takes it (reader/rows/allocator_account.h) from built
// segments: what was allocated and freed after the reading, from the bins counted as it began
// (layout 10), whether the count then still describes the heaps, and its JSON both ways.
#include "allocator_account.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace leakwrap {
namespace {

using testing::SegmentBuilder;

// A glibc reading of two arenas, taken when the bins had counted 90 of the sites' 100 blocks and
// 5 of their 8 frees.
SegmentBuilder read_builder() {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 100, .frees = 8, .alloc_bytes = 10'000, .free_bytes = 800, .frames = {0x1000}}};
    layout::AllocatorStatistics statistics{};
    statistics.allocator = layout::kAllocatorGlibc;
    statistics.taken_ns = 3'000'000'000;
    statistics.in_use_bytes = 9'000;
    statistics.free_bytes = 50'000;
    statistics.returnable_bytes = 40'000;
    statistics.system_bytes = 135'168;
    statistics.arenas = 2;
    statistics.arenas_total = 2;
    statistics.arena[0] = {.system_bytes = 135'168, .free_bytes = 20'000, .returnable_bytes = 16'384, .free_chunks = 3};
    statistics.arena[1] = {.system_bytes = 0, .free_bytes = 30'000, .returnable_bytes = 23'616, .free_chunks = 5};
    statistics.counted = {.allocs = 90, .frees = 5, .alloc_bytes = 9'000, .free_bytes = 500};
    builder.allocator_statistics = statistics;
    return builder;
}

TEST(AllocatorAccount, WhatTheBinsCountedSinceTheReadingIsWhatWasAllocatedAndFreedAfterIt) {
    const std::optional<AllocatorAccount> account = allocator_account(parse_segment(read_builder().build()));
    ASSERT_TRUE(account);
    EXPECT_EQ(account->allocator, "glibc");
    ASSERT_EQ(account->arenas.size(), 2u);
    EXPECT_EQ(account->arenas[1].free, 30'000u);
    ASSERT_TRUE(account->since_reading);
    EXPECT_EQ(account->since_reading->allocs, 10u);
    EXPECT_EQ(account->since_reading->frees, 3u);
    EXPECT_EQ(account->since_reading->alloc_bytes, 1'000u);
    EXPECT_EQ(account->since_reading->free_bytes, 300u);
    EXPECT_EQ(bytes_moved_since(*account), 1'000u + 300u + 13 * kMostChunkBytesBeyondRequest);
    // Post mortem its age is not known: what came after it says whether it still holds.
    EXPECT_FALSE(account->age_ns);
    EXPECT_TRUE(current(*account, 1'000 + 300 + 13 * kMostChunkBytesBeyondRequest));
    EXPECT_FALSE(current(*account, 1'000 + 300 + 13 * kMostChunkBytesBeyondRequest - 1));
    EXPECT_NE(allocator_account_summary(*account).find("10 blocks allocated and 3 freed since (1000 B and 300 B)"),
              std::string::npos)
        << allocator_account_summary(*account);
}

TEST(AllocatorAccount, NothingCountedSinceTheReadingKeepsItCurrentHoweverOld) {
    SegmentBuilder builder = read_builder();
    builder.allocator_statistics->counted = {.allocs = 100, .frees = 8, .alloc_bytes = 10'000, .free_bytes = 800};
    const std::optional<AllocatorAccount> account = allocator_account(parse_segment(builder.build()));
    ASSERT_TRUE(account && account->since_reading);
    EXPECT_EQ(bytes_moved_since(*account), 0u);
    EXPECT_TRUE(current(*account, 0));
    EXPECT_NE(allocator_account_summary(*account).find("nothing allocated or freed since"), std::string::npos)
        << allocator_account_summary(*account);
}

// Layout 9 wrote no counts with its readings: its padding there is not "nothing counted".
TEST(AllocatorAccount, ALayout9ReadingHasNoCountsSinceAndIsNotCurrentPostMortem) {
    SegmentBuilder builder = read_builder();
    builder.layout_version = 9;
    builder.allocator_statistics->counted = {};
    const std::optional<AllocatorAccount> account = allocator_account(parse_segment(builder.build()));
    ASSERT_TRUE(account);
    EXPECT_FALSE(account->since_reading);
    EXPECT_FALSE(bytes_moved_since(*account));
    EXPECT_FALSE(current(*account, UINT64_MAX));
    EXPECT_EQ(allocator_account_summary(*account).find("since ("), std::string::npos);
}

// A series line keeps the account as a report's JSON gives it, and suspects reads it back.
TEST(AllocatorAccount, ItsJsonReadsBackToTheSameAccount) {
    const AllocatorAccount account = *allocator_account(parse_segment(read_builder().build()));
    const AllocatorAccount back = allocator_account_from_json(allocator_account_json(account));
    EXPECT_EQ(allocator_account_json(back), allocator_account_json(account));
    EXPECT_EQ(back.since_reading->frees, 3u);
    EXPECT_EQ(back.arenas[0].free_chunks, 3u);

    nlohmann::json older = allocator_account_json(account);
    older.erase("since_reading");  // a series written before layout 10
    EXPECT_FALSE(allocator_account_from_json(older).since_reading);
    older.erase("arenas");
    EXPECT_THROW(allocator_account_from_json(older), nlohmann::json::exception);
}

}  // namespace
}  // namespace leakwrap
