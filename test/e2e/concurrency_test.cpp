// Counters stay exact when threads allocate and free each other's blocks or start one after
// another, and a forked child gets its own segment with what it inherited while the parent's
// stays as it was.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "ground_truth.h"
#include "harness.h"
#include "leakwrap/segment_layout.h"

namespace leakwrap::e2e {
namespace {

long long as_count(std::size_t value) { return static_cast<long long>(value); }

TEST(ThreadsCrossFree, FreesByOtherThreadsAreChargedToTheAllocatingSite) {
    using namespace ground_truth::threads_cross_free;
    Target target({paths::program("threads_cross_free")}, Environment::profiled());
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());

    std::size_t live_bytes = 0;
    for (std::size_t thread = 0; thread < kThreads; ++thread)
        live_bytes += (kBlocksPerThread - kFreedByNextThread) * block_size_of_thread(thread);
    const Counters handoff{as_count(kThreads * (kBlocksPerThread - kFreedByNextThread)), as_count(live_bytes),
                           as_count(kThreads * kBlocksPerThread), as_count(kThreads * kFreedByNextThread)};
    EXPECT_EQ(sites_calling(report, "handoff_alloc", 2).counters, handoff);

    const Counters churn{0, 0, as_count(kThreads * kChurnPerThread), as_count(kThreads * kChurnPerThread)};
    EXPECT_EQ(sites_calling(report, "churn_alloc_free", 2).counters, churn);
    expect_consistent_totals(report);
    EXPECT_EQ(target.release_and_wait(), 0);
}

// Layout 13: a shard of the bins and site deltas is backed when a thread first claims it, so a
// program of a few threads leaves the other shards' pages out of /dev/shm (R6), while its counts
// stay exact (above).
TEST(ThreadsCrossFree, OnlyTheShardsThreadsClaimedAreBacked) {
    using namespace ground_truth::threads_cross_free;
    Target target({paths::program("threads_cross_free")}, Environment::profiled());
    target.wait_ready();
    const int fd = open(segment_path(target.pid()).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    layout::Header header{};
    ASSERT_EQ(pread(fd, &header, sizeof header, 0), static_cast<ssize_t>(sizeof header));
    // The main thread and the workers, each a shard of its own while it runs.
    EXPECT_GE(header.bin_shards_backed, 2u);
    EXPECT_LE(header.bin_shards_backed, kThreads + 1);
    // The whole segment takes less room in /dev/shm than the counters of every shard alone, which
    // all of it took before (tmpfs counts the pages fallocate backs, written or not).
    struct stat info {};
    ASSERT_EQ(fstat(fd, &info), 0);
    const uint64_t every_shards_counters =
        uint64_t{header.bin_shards} * (layout::kSizeClassCount * sizeof(layout::BinCounters) +
                                       uint64_t{header.site_delta_slots} * sizeof(layout::SiteDelta));
    EXPECT_LT(static_cast<uint64_t>(info.st_blocks) * 512, every_shards_counters);
    close(fd);
    EXPECT_EQ(target.release_and_wait(), 0);
}

// Each thread's call-site cache is one an exited thread left (see thread_succession.cpp): the
// sites of the two paths to one malloc caller must still each count exactly their own threads'.
TEST(ThreadSuccession, ThreadsReusingExitedThreadsCachesCountAtTheirOwnSites) {
    using namespace ground_truth::thread_succession;
    Target target({paths::program("thread_succession")}, Environment::profiled());
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    const Counters each_path{
        as_count(kThreadsPerPath * kLivePerThread), as_count(kThreadsPerPath * kLivePerThread * kBlockSize),
        as_count(kThreadsPerPath * kBlocksPerThread), as_count(kThreadsPerPath * (kBlocksPerThread - kLivePerThread))};
    for (const char* path : {"left_path", "right_path"}) {
        const SiteMatch match = sites_calling(report, path, 4);
        EXPECT_EQ(match.sites, 1u) << path;
        EXPECT_EQ(match.counters, each_path) << path;
    }
    expect_consistent_totals(report);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(ForkLeak, ParentAndChildEachReportTheirOwnBlocks) {
    using namespace ground_truth::fork_leak;
    Target parent({paths::program("fork_leak")}, Environment::profiled());
    const pid_t child = fork_leak_child_pid(parent.wait_ready());
    ASSERT_NE(child, parent.pid());
    const nlohmann::json parent_report = report_json(parent.pid());
    const nlohmann::json child_report = report_json(child);

    EXPECT_EQ(parent_report.at("pid").get<pid_t>(), parent.pid());
    EXPECT_EQ(
        sites_calling(parent_report, "parent_site_alloc", 2).counters,
        (Counters{as_count(kParentBlocks), as_count(kParentBlocks * kParentBlockSize), as_count(kParentBlocks), 0}));
    EXPECT_EQ(sites_calling(parent_report, "child_site_alloc", 2).sites, 0u);

    EXPECT_EQ(child_report.at("pid").get<pid_t>(), child);
    const std::size_t still_inherited = kParentBlocks - kInheritedFreedByChild;
    const Counters inherited = sites_calling(child_report, "parent_site_alloc", 2).counters;
    EXPECT_EQ(inherited.live_blocks, as_count(still_inherited));
    EXPECT_EQ(inherited.live_bytes, as_count(still_inherited * kParentBlockSize));
    EXPECT_EQ(sites_calling(child_report, "child_site_alloc", 2).counters,
              (Counters{as_count(kChildBlocks), as_count(kChildBlocks * kChildBlockSize), as_count(kChildBlocks), 0}));

    expect_consistent_totals(parent_report);
    expect_consistent_totals(child_report);
    EXPECT_EQ(parent.release_and_wait(), 0) << "the parent exits 0 only if the child did";
}

// A child made by glibc's _Fork() runs no fork handler, so the preload cannot give it a segment;
// it shares its parent's until it exits. Its allocations and its frees of inherited blocks
// must not be counted there: e28f50c's preload showed the child's 40 blocks and 100 frees in
// the parent's report.
TEST(ForkLeak, AChildMadeByUnderscoreForkCountsNothingInItsParentsSegment) {
    using namespace ground_truth::fork_leak;
    Target parent({paths::program("fork_leak"), "_Fork"}, Environment::profiled());
    const pid_t child = fork_leak_child_pid(parent.wait_ready());
    ASSERT_NE(child, parent.pid());
    const nlohmann::json report = report_json(parent.pid());
    EXPECT_EQ(
        sites_calling(report, "parent_site_alloc", 2).counters,
        (Counters{as_count(kParentBlocks), as_count(kParentBlocks * kParentBlockSize), as_count(kParentBlocks), 0}));
    EXPECT_EQ(sites_calling(report, "child_site_alloc", 2).sites, 0u);
    EXPECT_FALSE(segment_exists(child)) << "the child has no segment of its own";
    expect_consistent_totals(report);
    EXPECT_EQ(parent.release_and_wait(), 0) << "the parent exits 0 only if the child did";
}

// --children: the parent's and the child's blocks in one report, rows joined by stack, and each
// row's split says which process holds what. Live counts add up exactly (two address spaces);
// the child's copy of the parent's history is counted again in allocs, which the test leaves be.
TEST(ForkLeak, ChildrenMergesParentAndChildWithTheSplitPerProcess) {
    using namespace ground_truth::fork_leak;
    Target parent({paths::program("fork_leak")}, Environment::profiled());
    const pid_t child = fork_leak_child_pid(parent.wait_ready());
    const nlohmann::json alone = report_json(parent.pid());
    const nlohmann::json child_alone = report_json(child);
    const nlohmann::json tree = report_json(parent.pid(), {"--children"});

    EXPECT_EQ(tree.at("pid").get<pid_t>(), parent.pid());
    ASSERT_EQ(tree.at("processes").size(), 2u) << tree.at("processes").dump(2);
    EXPECT_EQ(tree.at("processes")[0].at("pid").get<pid_t>(), parent.pid());
    EXPECT_EQ(tree.at("processes")[1].at("pid").get<pid_t>(), child);
    EXPECT_EQ(tree.at("totals").at("live_bytes").get<uint64_t>(),
              alone.at("totals").at("live_bytes").get<uint64_t>() +
                  child_alone.at("totals").at("live_bytes").get<uint64_t>());

    const std::size_t still_inherited = kParentBlocks - kInheritedFreedByChild;
    const SiteMatch parent_site = sites_calling(tree, "parent_site_alloc", 2);
    ASSERT_EQ(parent_site.sites, 1u) << "the parent's and the child's records share the stack";
    EXPECT_EQ(parent_site.counters.live_blocks, as_count(kParentBlocks + still_inherited));
    EXPECT_EQ(sites_calling(tree, "child_site_alloc", 2).counters.live_bytes, as_count(kChildBlocks * kChildBlockSize));

    const auto row = std::find_if(tree.at("sites").begin(), tree.at("sites").end(), [](const nlohmann::json& site) {
        const auto& frames = site.at("frames");
        return std::any_of(frames.begin(), frames.begin() + std::min<std::ptrdiff_t>(2, frames.size()),
                           [](const nlohmann::json& frame) { return frame.at("function") == "parent_site_alloc"; });
    });
    ASSERT_NE(row, tree.at("sites").end());
    std::map<pid_t, uint64_t> live_blocks_by_pid;
    for (const nlohmann::json& share : row->at("processes"))
        live_blocks_by_pid[share.at("pid").get<pid_t>()] = share.at("live_blocks").get<uint64_t>();
    EXPECT_EQ(live_blocks_by_pid, (std::map<pid_t, uint64_t>{{parent.pid(), kParentBlocks}, {child, still_inherited}}));
    EXPECT_EQ(parent.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
