// Counters stay exact when threads allocate and free each other's blocks, and a forked child
// gets its own segment with what it inherited while the parent's stays as it was.
#include <gtest/gtest.h>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

long long as_count(std::size_t value) {
    return static_cast<long long>(value);
}

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

pid_t child_pid_from(const std::vector<std::string>& lines) {
    for (const auto& line : lines)
        if (line.starts_with("CHILD ")) return static_cast<pid_t>(std::stoi(line.substr(6)));
    throw std::runtime_error("no CHILD line before READY");
}

TEST(ForkLeak, ParentAndChildEachReportTheirOwnBlocks) {
    using namespace ground_truth::fork_leak;
    Target parent({paths::program("fork_leak")}, Environment::profiled());
    const pid_t child = child_pid_from(parent.wait_ready());
    ASSERT_NE(child, parent.pid());
    const nlohmann::json parent_report = report_json(parent.pid());
    const nlohmann::json child_report = report_json(child);

    EXPECT_EQ(parent_report.at("pid").get<pid_t>(), parent.pid());
    EXPECT_EQ(sites_calling(parent_report, "parent_site_alloc", 2).counters,
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

}  // namespace
}  // namespace leakwrap::e2e
