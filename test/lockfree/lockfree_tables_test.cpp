// The recording paths that per-thread state makes lock-free, each on its own: the call-site
// cache, the bin shards a thread owns (and the shared one beyond them), the string pool.
#include "lockfree_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace lockfree {
namespace {

// The call-site cache fills an entry once a call keeps leading to the same site, and from then on
// trusts it only while every remembered return address is still in its slot: a caller that
// differs only further out must still get its own site, before the entry is filled, after, and
// when the two callers alternate.
TEST_F(LockFreePaths, TheCallSiteCacheTellsApartCallersThatDifferOnlyFurtherOut) {
    start();
    recording::enter_thread();
    constexpr int kCalls = 300;  // several times what fills an entry
    // One call expression for every call, so that everything but the caller is the same.
    std::vector<int> schedule(kCalls, 0);
    schedule.insert(schedule.end(), kCalls, 1);
    for (int call = 0; call < kCalls; ++call) schedule.insert(schedule.end(), {0, 1});
    const SiteFunction callers[] = {&lockfree_sites::caller_of_leaf<0>, &lockfree_sites::caller_of_leaf<1>};
    std::set<uint32_t> sites_of[2];
    for (int caller : schedule) sites_of[caller].insert(callers[caller](64));
    const std::set<uint32_t>& first_caller = sites_of[0];
    const std::set<uint32_t>& second_caller = sites_of[1];
    ASSERT_EQ(first_caller.size(), 1u);
    ASSERT_EQ(second_caller.size(), 1u);
    const uint32_t first = *first_caller.begin(), second = *second_caller.begin();
    ASSERT_NE(first, second);
    EXPECT_TRUE(names_function(recording::site_frames(first)[1], &lockfree_sites::caller_of_leaf<0>));
    EXPECT_TRUE(names_function(recording::site_frames(second)[1], &lockfree_sites::caller_of_leaf<1>));
    const leakwrap::Snapshot snapshot = final_snapshot();
    for (uint32_t site : {first, second}) {
        auto found = std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                                  [&](const leakwrap::Site& s) { return s.id == site; });
        ASSERT_NE(found, snapshot.sites.end());
        EXPECT_EQ(counts_of(found->counters()), (Counts{2 * kCalls, 0, 2 * kCalls * 64, 0})) << site;
    }
}

// More threads alive at once than there are owned bin shards: the rest share the last shard with
// atomic adds. Then a second wave takes over the shards the first gave back, with the counts
// their earlier owners left in them.
TEST_F(LockFreePaths, ThreadsBeyondTheOwnedShardsShareOneAtomically) {
    start();
    constexpr int kManyThreads = 72;  // more than the 63 owned shards
    constexpr int kBlocks = 400;
    Tally truth;
    for (int wave_threads : {kManyThreads, kThreads}) {
        std::vector<Tally> tallies(wave_threads);
        std::barrier<> all_alive(wave_threads);
        std::vector<std::thread> threads;
        for (int thread = 0; thread < wave_threads; ++thread) {
            threads.emplace_back([&, thread] {
                recording::enter_thread();
                Tally& tally = tallies[thread];
                std::vector<Block> blocks;
                for (int i = 0; i < kBlocks; ++i) {
                    SiteSpec spec = site_spec(i % kSharedSites);
                    blocks.push_back(allocate(spec.function, spec.size, tally));
                    if (i == 0) all_alive.arrive_and_wait();  // every thread holds a shard now
                }
                for (size_t i = 0; i < blocks.size(); i += 2) release(blocks[i], tally);
            });
        }
        for (auto& thread : threads) thread.join();
        for (const Tally& tally : tallies) truth += tally;
    }
    const leakwrap::Snapshot snapshot = final_snapshot();
    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);

    // The shared shard did count: 72 threads cannot all own one of 63.
    const layout::Header& h = recording::header();
    const auto* bins =
        reinterpret_cast<const layout::BinCounters*>(reinterpret_cast<const std::byte*>(&h) + h.bins_offset);
    uint64_t shared_shard_allocs = 0;
    for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class)
        shared_shard_allocs += bins[layout::bin_index(size_class, h.bin_shards - 1)].allocs;
    EXPECT_GE(shared_shard_allocs, static_cast<uint64_t>(kManyThreads - (h.bin_shards - 1)));
}

// Threads interning strings at once get disjoint ranges of the pool, each holding its text.
TEST_F(LockFreePaths, StringPoolHandsOutDisjointIntactStrings) {
    start();
    constexpr int kStrings = 300;
    const uint32_t used_before = recording::header().strings_used;
    auto text_of = [](int thread, int i) {
        std::string text = "thread " + std::to_string(thread) + " string " + std::to_string(i) + " ";
        text.append(static_cast<size_t>((thread * 37 + i * 11) % 150), static_cast<char>('a' + thread));
        return text;
    };
    std::array<std::vector<layout::StringRef>, kThreads> refs;
    {
        std::barrier<> start_together(kThreads);
        std::vector<std::thread> threads;
        for (int thread = 0; thread < kThreads; ++thread) {
            threads.emplace_back([&, thread] {
                start_together.arrive_and_wait();
                for (int i = 0; i < kStrings; ++i) {
                    layout::StringRef ref{};
                    if (recording::intern(text_of(thread, i), &ref)) refs[thread].push_back(ref);
                }
            });
        }
        for (auto& thread : threads) thread.join();
    }
    uint64_t bytes = 0;
    std::vector<layout::StringRef> all;
    for (int thread = 0; thread < kThreads; ++thread) {
        ASSERT_EQ(refs[thread].size(), static_cast<size_t>(kStrings));
        for (int i = 0; i < kStrings; ++i) {
            const std::string expected = text_of(thread, i);
            EXPECT_EQ(recording::pooled(refs[thread][i]), expected);
            EXPECT_EQ(recording::pooled(refs[thread][i]).data()[expected.size()], '\0');
            bytes += expected.size() + 1;
            all.push_back(refs[thread][i]);
        }
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    for (size_t i = 1; i < all.size(); ++i)
        EXPECT_LE(all[i - 1].offset + all[i - 1].length + 1, all[i].offset) << "strings overlap";
    EXPECT_EQ(recording::header().strings_used, used_before + bytes);
}

}  // namespace
}  // namespace lockfree
