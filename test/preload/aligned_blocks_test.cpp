// The table of headerless page-aligned blocks (preload/blocks/aligned_blocks.cpp): eight threads record
// blocks and each forgets another's, as cross-thread frees do, every size and site read back
// exact; entries freed are reused; a full table refuses, never loses what it holds. The
// addresses are made up (the table keeps numbers, it never touches the blocks); each test
// leaves the table empty, as the process-wide table it is.
#include "aligned_blocks.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#include "block_header.h"

namespace leakwrap {
namespace {

constexpr int kThreads = 8;
constexpr uint64_t kBlocksPerThread = 300;

void* block_at(uint64_t index) { return reinterpret_cast<void*>((index + 1) * kHeaderlessAlignment); }
uint64_t size_of(uint64_t index) { return index * 7 + 1; }
uint32_t site_of(uint64_t index) { return index % 5 == 0 ? kUnsampledSite : static_cast<uint32_t>(index * 3); }

TEST(HeaderlessBlocks, ThreadsForgetEachOthersBlocksExactly) {
    std::barrier all_recorded(kThreads);
    std::vector<int> failures(kThreads, 0);
    auto work = [&](int thread) {
        for (int round = 0; round < 3; ++round) {  // rounds after the first reuse freed entries
            for (uint64_t k = 0; k < kBlocksPerThread; ++k) {
                const uint64_t index = thread * kBlocksPerThread + k;
                failures[thread] += !remember_headerless_block(block_at(index), size_of(index), site_of(index));
            }
            all_recorded.arrive_and_wait();
            const int other = (thread + 1) % kThreads;
            for (uint64_t k = 0; k < kBlocksPerThread; ++k) {
                const uint64_t index = other * kBlocksPerThread + k;
                uint64_t size = 0;
                uint32_t site = 0;
                failures[thread] += !find_headerless_block(block_at(index), true, &size, &site);
                failures[thread] += size != size_of(index) || site != site_of(index);
            }
            all_recorded.arrive_and_wait();
        }
    };
    std::vector<std::thread> threads;
    for (int thread = 0; thread < kThreads; ++thread) threads.emplace_back(work, thread);
    for (std::thread& thread : threads) thread.join();
    for (int thread = 0; thread < kThreads; ++thread) EXPECT_EQ(failures[thread], 0) << thread;
    uint64_t size;
    uint32_t site;
    for (uint64_t index = 0; index < kThreads * kBlocksPerThread; ++index)
        EXPECT_FALSE(find_headerless_block(block_at(index), false, &size, &site)) << index;
}

TEST(HeaderlessBlocks, AFullTableRefusesAndKeepsWhatItHolds) {
    uint64_t held = 0;
    while (remember_headerless_block(block_at(held), size_of(held), site_of(held))) ++held;
    EXPECT_EQ(held, 49152u);  // three quarters of 65,536: neighbouring pages, neighbouring entries
    uint64_t size;
    uint32_t site;
    EXPECT_FALSE(find_headerless_block(block_at(held), false, &size, &site));  // refused, not kept
    for (uint64_t index = 0; index < held; ++index) {
        ASSERT_TRUE(find_headerless_block(block_at(index), true, &size, &site)) << index;
        EXPECT_EQ(size, size_of(index));
        EXPECT_EQ(site, site_of(index));
    }
    EXPECT_TRUE(remember_headerless_block(block_at(0), 1, 2));  // room again
    EXPECT_TRUE(find_headerless_block(block_at(0), true, &size, &site));
}

TEST(HeaderlessBlocks, OnlyPageAlignedBlocksOfAnEntrysSizeAreKept) {
    uint64_t size;
    uint32_t site;
    EXPECT_FALSE(remember_headerless_block(reinterpret_cast<void*>(3 * kHeaderlessAlignment + 16), 1, 1));
    EXPECT_FALSE(remember_headerless_block(block_at(7), kMaxHeaderlessSize + 1, 1));
    EXPECT_FALSE(find_headerless_block(block_at(7), false, &size, &site));
    ASSERT_TRUE(remember_headerless_block(block_at(7), kMaxHeaderlessSize, 9));
    EXPECT_TRUE(find_headerless_block(block_at(7), true, &size, &site));
    EXPECT_EQ(size, kMaxHeaderlessSize);
    EXPECT_EQ(site, 9u);
}

}  // namespace
}  // namespace leakwrap
