// The torture program's own ground truth, kept per call site while eight threads mix every kind
// of allocation with cross-thread frees, must be exactly what the real report says about each
// site, in a plain run, in both halves of a run that forks midway, and post mortem; in sampling
// mode, the estimates must land near it.
//
// A program that forks while another thread keeps learning frames from modules' files gets
// children that neither hang nor inherit a file of leakwrap's, and one that forks where that
// thread cannot leave its work does not hang either; threads cancelled while learning act on it
// only where their program asks.
//
// LEAKWRAP_TORTURE_SECONDS (default 3) sets how long each run tortures; raise it for soak runs.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

std::string torture_seconds() {
    const char* seconds = std::getenv("LEAKWRAP_TORTURE_SECONDS");
    return seconds != nullptr && *seconds != '\0' ? seconds : "3";
}

// What the program says it holds at each site function, per process.
using Truth = std::map<pid_t, std::map<std::string, Counters>>;

Truth truth_from(const std::vector<std::string>& lines) {
    Truth truth;
    for (const std::string& line : lines) {
        if (!line.starts_with("{")) continue;
        const nlohmann::json site = nlohmann::json::parse(line);
        truth[site.at("pid").get<pid_t>()][site.at("function").get<std::string>()] =
            Counters{site.at("live_blocks").get<long long>(), site.at("live_bytes").get<long long>(),
                     site.at("allocs").get<long long>(), site.at("frees").get<long long>()};
    }
    return truth;
}

void expect_report_matches(pid_t pid, const std::map<std::string, Counters>& truth_of_sites) {
    const nlohmann::json report = report_json(pid);
    EXPECT_EQ(report.at("pid").get<pid_t>(), pid);
    Counters sum_of_truth;
    for (const auto& [function, truth] : truth_of_sites) {
        // The site functions call the allocator themselves: theirs is the innermost frame.
        const SiteMatch match = sites_calling(report, function, 1);
        EXPECT_GT(match.sites, 0u) << function << " in process " << pid;
        EXPECT_EQ(match.counters, truth) << function << " in process " << pid;
        sum_of_truth.live_blocks += truth.live_blocks;
        sum_of_truth.live_bytes += truth.live_bytes;
        sum_of_truth.allocs += truth.allocs;
        sum_of_truth.frees += truth.frees;
    }
    // The totals also count what the runtime allocated for itself (threads, stdio, the queue).
    const auto& totals = report.at("totals");
    EXPECT_GE(totals.at("live_blocks").get<long long>(), sum_of_truth.live_blocks);
    EXPECT_GE(totals.at("live_bytes").get<long long>(), sum_of_truth.live_bytes);
    EXPECT_GE(totals.at("allocs").get<long long>(), sum_of_truth.allocs);
    EXPECT_GE(totals.at("frees").get<long long>(), sum_of_truth.frees);
    EXPECT_EQ(totals.at("lost_sites").get<long long>(), 0);
    expect_consistent_totals(report);
}

// A SIGKILL can land between the exact totals and the site counters of one operation, and each
// of the torture's threads (eight workers, the churn thread, main) has at most one in flight.
void expect_totals_within_operations_in_flight(const nlohmann::json& report) {
    constexpr long long kThreads = 10, kLargestBlock = 300 * 1024;
    const auto& totals = report.at("totals");
    for (const auto& [field, most_in_flight] :
         {std::pair{"allocs", kThreads}, std::pair{"frees", kThreads},
          std::pair{"alloc_bytes", kThreads * kLargestBlock}, std::pair{"free_bytes", kThreads * kLargestBlock}}) {
        long long sum_over_sites = 0;
        for (const auto& site : report.at("sites")) sum_over_sites += site.at(field).get<long long>();
        EXPECT_LE(std::abs(totals.at(field).get<long long>() - sum_over_sites), most_in_flight)
            << "totals." << field << " vs the sum over sites";
    }
    for (const auto& site : report.at("sites"))
        EXPECT_EQ(site.at("live_blocks").get<long long>(),
                  site.at("allocs").get<long long>() - site.at("frees").get<long long>());
}

TEST(Torture, EverySiteIsExactAfterEightThreadsMixAllocationsAndFreeEachOthersBlocks) {
    Target target({paths::program("torture"), torture_seconds()}, Environment::profiled());
    const Truth truth = truth_from(target.wait_ready("READY", 120s));
    ASSERT_EQ(truth.size(), 1u) << "one process";
    ASSERT_EQ(truth.begin()->first, target.pid());
    ASSERT_EQ(truth.begin()->second.size(), 6u) << "every site function reports its truth";
    expect_report_matches(target.pid(), truth.begin()->second);
    EXPECT_EQ(target.release_and_wait(), 0);
}

// Sampling mode: bare unsampled blocks beside sampled ones, freed and reallocated by other
// threads, and a fork halfway. Nothing crashes, both processes exit cleanly, and every site's
// estimates land near what the program counted. A site allocates a few hundred thousand blocks
// of up to 2 KiB, one in four or five of them sampled at this interval: its allocations are
// estimated within a few percent, and its live bytes (several MiB) within several, so the bounds
// below are far outside the noise, and still catch blocks counted at the wrong site or not at all.
TEST(Torture, InSamplingModeEverySitesEstimatesLandNearItsTruthInBothHalvesOfAFork) {
    Target parent({paths::program("torture"), torture_seconds(), "fork"},
                  Environment::profiled().set("LEAKWRAP_SAMPLE", "4096"));
    const Truth truth = truth_from(parent.wait_ready("READY", 120s));
    ASSERT_EQ(truth.size(), 2u) << "the parent and its child";
    for (const auto& [pid, sites] : truth) {
        const nlohmann::json report = report_json(pid);
        EXPECT_EQ(report.at("totals_estimated"), true);
        for (const auto& [function, site_truth] : sites) {
            const SiteMatch match = sites_calling(report, function, 1);
            EXPECT_GT(match.sites, 0u) << function << " in process " << pid;
            EXPECT_NEAR(match.counters.allocs, site_truth.allocs, 0.05 * site_truth.allocs)
                << function << " in process " << pid;
            if (site_truth.live_bytes > 0) {
                EXPECT_NEAR(match.counters.live_bytes, site_truth.live_bytes, 0.2 * site_truth.live_bytes)
                    << function << " in process " << pid;
            }
        }
    }
    EXPECT_EQ(parent.release_and_wait(), 0);
}

TEST(Torture, ParentAndChildForkedMidRunAreEachExact) {
    Target parent({paths::program("torture"), torture_seconds(), "fork"}, Environment::profiled());
    const Truth truth = truth_from(parent.wait_ready("READY", 120s));
    ASSERT_EQ(truth.size(), 2u) << "the parent and the child";
    ASSERT_TRUE(truth.contains(parent.pid()));
    for (const auto& [pid, truth_of_sites] : truth) expect_report_matches(pid, truth_of_sites);
    EXPECT_EQ(parent.release_and_wait(), 0) << "the parent exits 0 only if the child did";
}

// Leaves the kill to land among allocations in flight, then reads what the segment kept.
TEST(Torture, KilledMidRunLeavesAConsistentSegmentReportedDead) {
    Target target({paths::program("torture"), "600"}, Environment::profiled());
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    long long churned = 0;
    while (churned < 20000 && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(50ms);
        if (segment_exists(target.pid()))
            churned = sites_calling(report_json(target.pid()), "torture_churn", 1).counters.allocs;
    }
    ASSERT_GE(churned, 20000) << "the torture never got going";
    const pid_t pid = target.pid();
    EXPECT_EQ(target.kill_and_reap(), 128 + SIGKILL);

    const nlohmann::json report = report_json(pid);
    std::filesystem::remove(segment_path(pid));
    EXPECT_EQ(report.at("state"), "dead");
    EXPECT_GE(sites_calling(report, "torture_churn", 1).counters.allocs, churned);
    EXPECT_GT(sites_calling(report, "torture_realloc", 1).counters.allocs, 0);
    expect_totals_within_operations_in_flight(report);
}

// A thousand copies of a plugin, each a module whose first call makes a walk look it up in the
// loader and read its unwind table from its file, while the main thread forks; each child
// lists its descriptors, throws an exception and calls a copy never called before. Without
// the fork fence, children inherited a copy's descriptor in most runs and one in a few runs hung
// in dl_iterate_phdr() or in libunwind's step (preload/unwind/fork_fence.h). The calls that a fork
// turned away from learning still count every allocation, at the frames learned so far.
TEST(Torture, ChildrenForkedWhileAnotherThreadLearnsFramesNeitherHangNorInheritAFile) {
    using namespace ground_truth::fork_while_learning;
    using ground_truth::torture_plugin::kAllocationsPerChurn;
    const auto command = [](const TemporaryDirectory& scratch) {
        return std::vector<std::string>{paths::program("fork_while_learning"), paths::program("libtorture_plugin.so"),
                                        scratch.path().string()};
    };
    std::string checksum;
    {
        const TemporaryDirectory scratch;
        const Completed bare = run(command(scratch), Environment::bare(), {}, 150s);
        ASSERT_EQ(bare.exit_code, 0) << bare.err;
        checksum = bare.out.substr(bare.out.find("checksum"), bare.out.find('\n') - bare.out.find("checksum"));
    }
    for (int attempt = 0; attempt < 3; ++attempt) {
        const TemporaryDirectory scratch;
        Target target(command(scratch), Environment::profiled());
        const std::vector<std::string> lines = target.wait_ready("READY", 150s);
        ASSERT_EQ(lines.size(), 1u);
        const std::string& summary = lines[0];
        int forks = 0, while_learning = 0, inherited = -1, hung = -1, failed = -1;
        ASSERT_EQ(std::sscanf(summary.c_str(), "forks %d learning %d inherited %d hung %d failed %d", &forks,
                              &while_learning, &inherited, &hung, &failed),
                  5)
            << summary;
        EXPECT_GE(forks, 4) << summary;
        EXPECT_GE(while_learning, 1) << summary;
        EXPECT_EQ(hung, 0) << summary;
        EXPECT_EQ(failed, 0) << summary;
        EXPECT_EQ(inherited, 0) << summary;
        EXPECT_NE(summary.find(checksum), std::string::npos) << summary << " vs bare " << checksum;

        const nlohmann::json report = report_json(target.pid());
        const long long calls = kCopies - 1;
        EXPECT_EQ(sites_calling(report, "plugin_churn", 1).counters,
                  (Counters{0, 0, calls * kAllocationsPerChurn, calls * kAllocationsPerChurn}));
        expect_consistent_totals(report);
        EXPECT_EQ(target.release_and_wait(), 0);
    }
}

// A fork from the program's own dl_iterate_phdr() callback leaves the child the loader's lock
// held for good; the child allocates from a new stack, calls into a module it never called and
// exits. e28f50c's preload hung that child in its own dl_iterate_phdr(). With a thread waiting
// for the lock inside a fenced section, the fork also gives up waiting for it after its bound.
TEST(Torture, ForkInsideTheProgramsLoaderCallbackNeitherHangsTheParentNorTheChild) {
    const TemporaryDirectory scratch;
    for (const char* mode : {"alone", "helper"}) {
        const std::vector<std::string> command{paths::program("fork_in_loader_callback"),
                                               paths::program("libtorture_plugin.so"), scratch.path().string(), mode};
        const Completed bare = run(command, Environment::bare(), {}, 30s);
        ASSERT_EQ(bare.exit_code, 0) << mode << ": " << bare.err;
        ASSERT_EQ(bare.out, "child exited 0\n") << mode;
        const Completed profiled = run(command, Environment::profiled(), {}, 30s);
        EXPECT_EQ(profiled.exit_code, 0) << mode << ": " << profiled.err;
        EXPECT_EQ(profiled.out, "child exited 0\n") << mode;
    }
}

// Threads cancelled while their calls into new plugin copies make the walk read unwind tables
// from files: each acts on its cancellation where its program asks (pthread_testcancel), never
// inside malloc, where a cancellation point of the preload's file reads made e28f50c's preload
// abort the program ("terminate called without an active exception"). Every allocation of every
// call that ran is counted.
TEST(Torture, ThreadsCancelledWhileLearningFramesActOnItOnlyWhereTheProgramAsks) {
    using namespace ground_truth::cancelled_while_learning;
    using ground_truth::torture_plugin::kAllocationsPerChurn;
    const TemporaryDirectory scratch;
    const std::vector<std::string> command{paths::program("cancelled_while_learning"),
                                           paths::program("libtorture_plugin.so"), scratch.path().string()};
    const Completed bare = run(command, Environment::bare(), {}, 60s);
    ASSERT_EQ(bare.exit_code, 0) << bare.err;
    ASSERT_EQ(bare.out.rfind("cancelled " + std::to_string(kWorkers) + " calls ", 0), 0u) << bare.out;

    Target target(command, Environment::profiled());
    const std::vector<std::string> lines = target.wait_ready("READY", 60s);
    ASSERT_EQ(lines.size(), 1u);
    int cancelled = 0;
    long long calls = 0;
    ASSERT_EQ(std::sscanf(lines[0].c_str(), "cancelled %d calls %lld", &cancelled, &calls), 2) << lines[0];
    EXPECT_EQ(cancelled, kWorkers);
    EXPECT_GT(calls, 0);
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(sites_calling(report, "plugin_churn", 1).counters,
              (Counters{0, 0, calls * kAllocationsPerChurn, calls * kAllocationsPerChurn}));
    expect_consistent_totals(report);
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
