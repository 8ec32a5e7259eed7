// What happens to a segment when its process exits, is killed, opts out or execs, and how the
// reader reports and cleans up segments whose process is gone. These tests run `--clean`, which
// removes every segment of a gone process, so CTest runs them one at a time (RESOURCE_LOCK).
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::alloc_kinds;

const Counters kLeakMallocCounters{static_cast<long long>(kMallocCount - kMallocFreed),
                                   static_cast<long long>((kMallocCount - kMallocFreed) * kMallocSize),
                                   static_cast<long long>(kMallocCount), static_cast<long long>(kMallocFreed)};

void expect_reports_alloc_kinds(const nlohmann::json& report) {
    EXPECT_EQ(report.at("exe").get<std::string>(), paths::program("alloc_kinds"));
    EXPECT_EQ(sites_calling(report, "leak_malloc", 1).counters, kLeakMallocCounters);
}

void expect_clean_removes_segment_of(pid_t pid) {
    const Completed clean = run_report({"--clean"});
    EXPECT_EQ(clean.exit_code, 0) << clean.err;
    EXPECT_FALSE(segment_exists(pid));
}

// Whether --list shows the pid with this state (and a failure saying what it shows if not).
bool listed_with_state(pid_t pid, const std::string& state) {
    const Completed list = run_report({"--list"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    std::istringstream lines(list.out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        bool has_pid = false, has_state = false;
        for (std::string word; words >> word;) {
            has_pid = has_pid || word == std::to_string(pid);
            has_state = has_state || word == state;
        }
        if (has_pid && has_state) return true;
    }
    ADD_FAILURE() << "--list should show pid " << pid << " as " << state << ":\n" << list.out;
    return false;
}

TEST(Lifecycle, SegmentLivesWithTheProcessAndIsRemovedAtNormalExit) {
    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    EXPECT_TRUE(segment_exists(target.pid()));
    const pid_t pid = target.pid();
    EXPECT_EQ(target.release_and_wait(), 0);
    EXPECT_FALSE(segment_exists(pid));
}

TEST(Lifecycle, KeptSegmentIsReportedAfterExitUntilCleaned) {
    Target target({paths::program("alloc_kinds")}, Environment::profiled().set("LEAKWRAP_KEEP", "1"));
    target.wait_ready();
    const pid_t pid = target.pid();
    EXPECT_EQ(target.release_and_wait(), 0);
    ASSERT_TRUE(segment_exists(pid));

    const nlohmann::json report = report_json(pid);
    EXPECT_EQ(report.at("state"), "exited");
    expect_reports_alloc_kinds(report);
    expect_clean_removes_segment_of(pid);
}

TEST(Lifecycle, KilledProcessLeavesASegmentReportedDeadUntilCleaned) {
    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    const pid_t pid = target.pid();
    EXPECT_EQ(target.kill_and_reap(), 128 + SIGKILL);
    ASSERT_TRUE(segment_exists(pid));

    const nlohmann::json report = report_json(pid);
    EXPECT_EQ(report.at("state"), "dead");
    expect_reports_alloc_kinds(report);
    // Post mortem there is no RSS: said so, never zeros.
    EXPECT_TRUE(report.at("totals").at("memory").is_null()) << report.at("totals").dump();
    const Completed text = run_report({std::to_string(pid)});
    EXPECT_NE(text.out.find("memory: no RSS: the process is gone (post mortem)\n"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("RSS 0"), std::string::npos);

    EXPECT_TRUE(listed_with_state(pid, "killed?"));

    expect_clean_removes_segment_of(pid);
}

TEST(Lifecycle, DisabledProfilingCreatesNoSegment) {
    Target target({paths::program("alloc_kinds")}, Environment::profiled().set("LEAKWRAP_DISABLE", "1"));
    target.wait_ready();
    EXPECT_FALSE(segment_exists(target.pid()));
    EXPECT_EQ(run_report({std::to_string(target.pid())}).exit_code, 1);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Lifecycle, ProgramExecedInPlaceOfAProfiledShellIsProfiledAtThatPid) {
    // The shell is profiled first, so the program must replace the shell's segment, not add to it.
    Target target({"/bin/sh", "-c", "exec \"$0\"", paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    expect_reports_alloc_kinds(report_json(target.pid()));
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Lifecycle, ChildForkedAndExecedByAProfiledShellIsProfiledInItsOwnSegment) {
    // The child announces its own pid before it execs the program, so CHILD precedes READY. A
    // background job's stdin is /dev/null unless redirected, so it gets ours through fd 3.
    const std::string script = "exec 3<&0; /bin/sh -c 'echo \"CHILD $$\"; exec \"$0\"' \"$0\" <&3 3<&- & wait $!";
    Target shell({"/bin/sh", "-c", script, paths::program("alloc_kinds")}, Environment::profiled());
    const std::vector<std::string> lines = shell.wait_ready();
    ASSERT_FALSE(lines.empty());
    ASSERT_TRUE(lines.front().starts_with("CHILD ")) << lines.front();
    const pid_t child = static_cast<pid_t>(std::stoi(lines.front().substr(6)));

    EXPECT_TRUE(segment_exists(shell.pid()));
    const nlohmann::json report = report_json(child);
    EXPECT_EQ(report.at("pid").get<pid_t>(), child);
    expect_reports_alloc_kinds(report);
    EXPECT_EQ(shell.release_and_wait(), 0) << "the shell exits with the child's code";
}

TEST(Lifecycle, AnExecOfAProgramWithoutThePreloadMarksTheSegmentReplacedAndTheNextStartRemovesIt) {
    // The profiled shell execs env, which is profiled too and replaces its segment; env then
    // execs the program without the preload (execvp), leaving env's segment at the pid.
    Target target({"/bin/sh", "-c", "exec env -u LD_PRELOAD \"$0\"", paths::program("alloc_kinds")},
                  Environment::profiled());
    target.wait_ready();
    const pid_t pid = target.pid();
    ASSERT_TRUE(segment_exists(pid));
    const nlohmann::json report = report_json(pid);
    EXPECT_EQ(report.at("state"), "replaced");
    EXPECT_NE(report.at("exe").get<std::string>(), paths::program("alloc_kinds")) << "the segment is env's";
    EXPECT_TRUE(listed_with_state(pid, "replaced"));
    EXPECT_EQ(target.release_and_wait(), 0);

    // Gone with its process: the next profiled start removes it, however many dead segments
    // LEAKWRAP_KEEP_DEAD keeps.
    Target next({paths::program("alloc_kinds")}, Environment::profiled().set("LEAKWRAP_KEEP_DEAD", "1024"));
    next.wait_ready();
    EXPECT_FALSE(segment_exists(pid));
    EXPECT_EQ(next.release_and_wait(), 0);
}

TEST(Lifecycle, AFailedExecLeavesTheSegmentRunning) {
    // bash goes on after a failed exec with execfail set.
    Target target(
        {"/bin/bash", "-c", "shopt -s execfail; exec /nonexistent/program 2>/dev/null; echo READY; read line"},
        Environment::profiled());
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(report.at("state"), "alive");
    EXPECT_EQ(report.at("exe").get<std::string>(), "/usr/bin/bash");
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
