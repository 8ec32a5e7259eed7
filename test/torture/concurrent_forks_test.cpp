// Threads that fork at the same time, beside a thread that allocates, frees and leaks: the
// program must run exactly as it does bare (every child exits 0, the parent too), the parent's
// leaking site must hold exactly the blocks it leaked, and a child must count its own work in
// a segment of its own. 5a0a758's preload crashed the parent (SIGSEGV in the fork snapshot's
// copy, which concurrent forks shared) in most runs of four forking threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

struct ForkRun {
    pid_t held_child = 0;
    long long leaked = -1;
    int failed_children = -1;
};

ForkRun parse_run(const std::vector<std::string>& lines) {
    ForkRun run;
    for (const std::string& line : lines) {
        int pid = 0;
        long long leaked = 0;
        int failed = 0;
        if (std::sscanf(line.c_str(), "HELD %d", &pid) == 1)
            run.held_child = pid;
        else if (std::sscanf(line.c_str(), "LEAKED %lld", &leaked) == 1)
            run.leaked = leaked;
        else if (std::sscanf(line.c_str(), "FAILED CHILDREN %d", &failed) == 1)
            run.failed_children = failed;
    }
    return run;
}

// Each child allocates 64 blocks of 32 + i bytes and frees those of even i (concurrent_forks.cpp).
Counters child_truth() {
    Counters truth{.allocs = 64, .frees = 32};
    for (long long i = 1; i < 64; i += 2) {
        ++truth.live_blocks;
        truth.live_bytes += 32 + i;
    }
    return truth;
}

// One run of the program: the parent and its held child are each read while they run.
void run_concurrent_forks(const std::vector<std::string>& arguments, int run_number) {
    std::vector<std::string> command{paths::program("concurrent_forks")};
    command.insert(command.end(), arguments.begin(), arguments.end());
    Target target(command, Environment::profiled());
    const ForkRun run = parse_run(target.wait_ready("READY", 90s));
    SCOPED_TRACE("run " + std::to_string(run_number));
    EXPECT_EQ(run.failed_children, 0);
    EXPECT_GT(run.leaked, 0);

    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(sites_calling(report, "leak_beside_forks", 1).counters.live_blocks, run.leaked);
    expect_consistent_totals(report);

    const nlohmann::json child_report = report_json(run.held_child);
    EXPECT_EQ(child_report.at("pid").get<pid_t>(), run.held_child);
    EXPECT_EQ(sites_calling(child_report, "allocate_in_child", 1).counters, child_truth());
    EXPECT_EQ(target.release_and_wait(), 0) << "the parent exits 0 only if its held child did";
}

TEST(ConcurrentForks, FourThreadsForkingBesideAnAllocatingThreadRunFiftyTimesWithoutAFault) {
    for (int run = 0; run < 50; ++run) {
        run_concurrent_forks({"4", "25"}, run);
        if (HasFatalFailure()) return;
    }
}

TEST(ConcurrentForks, ChildrenThatExecRunCleanlyToo) {
    for (int run = 0; run < 10; ++run) run_concurrent_forks({"4", "25", "exec"}, run);
}

// Starved of the processor by two spinning threads, forks interleave at other points.
TEST(ConcurrentForks, EightForkingThreadsUnderACpuHog) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> hogs;
    for (int i = 0; i < 2; ++i)
        hogs.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
        });
    for (int run = 0; run < 10; ++run) run_concurrent_forks({"8", "10"}, run);
    stop.store(true);
    for (std::thread& hog : hogs) hog.join();
}

}  // namespace
}  // namespace leakwrap::e2e
