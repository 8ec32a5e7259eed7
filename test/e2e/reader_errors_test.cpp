// leakwrap-report fails cleanly on real inputs it cannot report: one line on stderr, exit 1 for
// a runtime error and 2 for bad usage.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "temporary_directory.h"

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
    const TemporaryDirectory directory;
    const std::string not_a_segment = (directory.path() / "not_a_segment").string();
    {
        std::FILE* file = std::fopen(not_a_segment.c_str(), "w");
        ASSERT_NE(file, nullptr);
        std::fputs("this is not a leakwrap segment\n", file);
        std::fclose(file);
    }
    expect_one_line_error(run_report({"--segment", not_a_segment}), 1);
}

// Another user's segment (mode 0600) cannot be opened: the error names its owner and says to
// read it as that user. Here the owner is root and the reader runs as nobody.
TEST(ReaderErrors, AnotherUsersSegmentNamesTheOwnerAndWhatToDo) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run the reader as another user";
    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    const Completed report = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  paths::report_tool, std::to_string(target.pid())},
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

namespace leakwrap::e2e {
namespace {

// In a sticky directory everyone may write to (/tmp), an output name that is another user's link
// is never written through, even where fs.protected_symlinks is off: -o, watch --out and plot -o
// refuse it in one line and the link's target is untouched. This user's own link is followed.
TEST(ReaderErrors, OutputsRefuseAnotherUsersLinkInAStickyDirectory) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root, to plant a link as another user";
    const TemporaryDirectory shared, elsewhere;
    std::filesystem::permissions(shared.path(), std::filesystem::perms::all | std::filesystem::perms::sticky_bit);
    const std::filesystem::path victim = elsewhere.path() / "victim", planted = shared.path() / "out";
    std::ofstream(victim) << "precious\n";
    std::filesystem::create_symlink(victim, planted);
    ASSERT_EQ(lchown(planted.c_str(), 65534, 65534), 0);

    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const std::filesystem::path series = elsewhere.path() / "series.jsonl";
    ASSERT_EQ(run_report({"watch", pid, "--count", "3", "--interval", "100ms", "--out", series.string()}).exit_code, 0);
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{pid, "-o", planted.string()},
          std::vector<std::string>{"watch", pid, "--count", "1", "--out", planted.string()},
          std::vector<std::string>{"plot", series.string(), "-o", planted.string()}}) {
        const Completed refused = run_report(command);
        EXPECT_EQ(refused.exit_code, 1) << command[1] << ": " << refused.err;
        EXPECT_NE(refused.err.find("a link of another user's"), std::string::npos) << refused.err;
        EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    }
    std::ifstream kept(victim);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), std::istreambuf_iterator<char>()), "precious\n");

    // This user's own link there is its own business.
    const std::filesystem::path own = shared.path() / "own";
    std::filesystem::create_symlink(elsewhere.path() / "report.txt", own);
    EXPECT_EQ(run_report({pid, "-o", own.string()}).exit_code, 0);
    EXPECT_TRUE(std::filesystem::file_size(elsewhere.path() / "report.txt") > 0);
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
