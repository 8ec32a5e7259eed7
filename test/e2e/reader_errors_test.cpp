// leakwrap-report fails cleanly on real inputs it cannot report: one line on stderr, exit 1 for
// a runtime error and 2 for bad usage.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

void expect_one_line_error(const Completed& report, int exit_code) {
    EXPECT_EQ(report.exit_code, exit_code) << report.err;
    EXPECT_EQ(std::count(report.err.begin(), report.err.end(), '\n'), 1) << report.err;
    EXPECT_TRUE(report.err.ends_with('\n')) << report.err;
    EXPECT_EQ(report.out, "");
}

TEST(ReaderErrors, NoSuchProcessIsARuntimeError) {
    expect_one_line_error(run_report({std::to_string(unused_pid())}), 1);
}

TEST(ReaderErrors, ProcessRunningWithoutThePreloadIsARuntimeError) {
    Target target({paths::program("alloc_kinds")}, Environment::bare());
    target.wait_ready();
    expect_one_line_error(run_report({std::to_string(target.pid()), "--format", "json"}), 1);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(ReaderErrors, SegmentFileThatIsNotASegmentIsARuntimeError) {
    const std::string not_a_segment = ::testing::TempDir() + "not_a_segment." + std::to_string(getpid());
    {
        std::FILE* file = std::fopen(not_a_segment.c_str(), "w");
        ASSERT_NE(file, nullptr);
        std::fputs("this is not a leakwrap segment\n", file);
        std::fclose(file);
    }
    expect_one_line_error(run_report({"--segment", not_a_segment}), 1);
    std::remove(not_a_segment.c_str());
}

// Another user's segment (mode 0600) cannot be opened: the error names its owner and says to
// read it as that user. Here the owner is root and the reader runs as nobody.
TEST(ReaderErrors, AnotherUsersSegmentNamesTheOwnerAndWhatToDo) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run the reader as another user";
    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    const Completed report = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                  "--clear-groups", paths::report_tool, std::to_string(target.pid())},
                                 Environment::bare());
    expect_one_line_error(report, 1);
    EXPECT_NE(report.err.find("belongs to root (uid 0); run leakwrap-report as that user (sudo -u "
                              "root leakwrap-report ...)"),
              std::string::npos)
        << report.err;
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(ReaderErrors, BadUsageExitsTwo) {
    const std::string self = std::to_string(getpid());
    for (const std::vector<std::string>& arguments : std::vector<std::vector<std::string>>{
             {"--no-such-option"},
             {self, "--format", "yaml"},
             {self, "--sort", "nowhere"},
             {self, "--top", "many"},
         }) {
        const Completed report = run_report(arguments);
        EXPECT_EQ(report.exit_code, 2) << arguments.front() << " " << arguments.back() << ": " << report.err;
        EXPECT_NE(report.err, "");
    }
}

}  // namespace
}  // namespace leakwrap::e2e
