// `leakwrap-report top` in a real terminal (top_pane.h) on Ruby programs that leak at one line,
// in one process or in two forked workers: the line's row (--by ruby) or the stack's, its growth
// since the view started, and the key that switches between the two.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <regex>

#include "ruby_support.h"
#include "top_pane.h"

namespace leakwrap::e2e::ruby {
namespace {

// test/ruby/programs/leak_in_batches.rb's arguments: 3 blocks before the view starts, 5 more on
// SIGUSR1, each of 100 KiB, so that the line's rows rank among the first of the pane by live
// bytes (next to Ruby's own, in a few KiB each) and their sizes read exactly in KiB.
constexpr std::size_t kSize = 100 * 1024;
constexpr std::size_t kFirst = 3;
constexpr std::size_t kSecond = 5;
constexpr std::size_t kBoth = kFirst + kSecond;

class RubyTop : public ::testing::Test {
protected:
    void SetUp() override {
        LEAKWRAP_SKIP_WITHOUT_RUBY();
        ASSERT_FALSE(e2e::paths::tmux.empty()) << "tmux is not installed (scripts/setup.sh installs it)";
    }
    void TearDown() override {
        if (target_) {
            EXPECT_EQ(target_->release_and_wait(), 0);
        }
    }

    // `program` (leak_in_batches.rb, workers_leak_alike.rb) with its first batch leaked; `more`
    // are its further arguments.
    void start(const std::vector<std::string>& more = {}, const std::string& program = "leak_in_batches.rb") {
        const std::string script = paths::source("test/ruby/programs/" + program);
        // The row is labelled by the file as ruby was given it: run from its directory, the
        // label is short enough for the pane whatever the checkout's path.
        leak_label_ = "ruby " + program + ":" + std::to_string(line_containing(script, "# the leak's line"));
        std::vector<std::string> argv{paths::ruby,
                                      "-C",
                                      std::filesystem::path(script).parent_path(),
                                      program,
                                      std::to_string(kSize),
                                      std::to_string(kFirst),
                                      std::to_string(kSecond)};
        argv.insert(argv.end(), more.begin(), more.end());
        target_ = std::make_unique<Target>(argv, Environment::profiled());
        for (const std::string& line : target_->wait_ready())
            if (line.starts_with("SECOND BATCH IN ")) second_batch_pid_ = std::stoi(line.substr(16));
        ASSERT_GT(second_batch_pid_, 0) << "leak_in_batches.rb did not say who leaks the second batch";
    }

    std::vector<std::string> top_of_target(const std::vector<std::string>& options) const {
        std::vector<std::string> arguments{std::to_string(target_->pid()), "--interval", "200ms"};
        arguments.insert(arguments.end(), options.begin(), options.end());
        return arguments;
    }

    // Whether the screen has the leak's line with both batches, the second as its growth.
    bool shows_both_batches(const std::string& screen) const {
        return table_row_shows(screen, leak_label_, kBoth * kSize, kBoth, kSecond * kSize);
    }

    // The screen once it has the leak's row with the first batch, grown by nothing: growth counts
    // from the view's first sample, which has that batch.
    std::string wait_for_first_batch(TmuxPane& pane, const std::string& what) const {
        return pane.wait_for(
            [&](const std::string& s) { return table_row_shows(s, leak_label_, kFirst * kSize, kFirst, 0); },
            what + " with the first batch");
    }

    // Has the second batch leaked, waits for the row with both, the second as its growth, and quits.
    void leak_second_batch_and_quit(TmuxPane& pane, const std::string& what) const {
        kill(second_batch_pid_, SIGUSR1);
        pane.wait_for([&](const std::string& s) { return shows_both_batches(s); },
                      what + " with both batches, the second as its growth");
        pane.send_keys("q");
        pane.expect_exit_and_terminal_restored(0);
    }

    std::string leak_label_;
    pid_t second_batch_pid_ = 0;
    std::unique_ptr<Target> target_;
};

TEST_F(RubyTop, ShowsTheLeakingLineWithItsGrowthAndTheKeyRSwitchesToNativeSitesAndBack) {
    start();
    TmuxPane pane(top_of_target({"--by", "ruby"}));
    std::string screen = wait_for_first_batch(pane, "the leak's line");
    EXPECT_NE(screen.find("GROWTH  RUBY LINE\n"), std::string::npos) << screen;
    EXPECT_NE(screen.find("  (no Ruby frame)\n"), std::string::npos) << screen;

    kill(second_batch_pid_, SIGUSR1);
    pane.wait_for([&](const std::string& s) { return shows_both_batches(s); },
                  "the leak's line with both batches, the second as its growth");

    // By native site the batches are two rows (their Ruby backtraces differ), each grown since
    // the view started: the first not at all, the second, which came later, from 0.
    pane.send_keys("r");
    screen = pane.wait_for(
        [&](const std::string& s) {
            return table_row_shows(s, leak_label_, kFirst * kSize, kFirst, 0) &&
                   table_row_shows(s, leak_label_, kSecond * kSize, kSecond, kSecond * kSize);
        },
        "the two batches as native sites");
    EXPECT_NE(screen.find("GROWTH  SITE\n"), std::string::npos) << screen;
    EXPECT_FALSE(shows_both_batches(screen)) << screen;

    pane.send_keys("r");
    pane.wait_for(
        [&](const std::string& s) {
            return s.find("GROWTH  RUBY LINE\n") != std::string::npos && shows_both_batches(s);
        },
        "the leak's line again, its growth unchanged");

    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

// The workers' rows of the line merge into one whose id changes: the first batch's worker was
// forked last, and the ids of a merged tree follow the order the processes started in. The row
// keeps its growth all the same.
TEST_F(RubyTop, WithChildrenALineLeakedByTwoWorkersIsOneRowThatKeepsItsGrowth) {
    start({"workers"});
    TmuxPane pane(top_of_target({"--by", "ruby", "--children"}));
    const std::string screen = wait_for_first_batch(pane, "the leak's line");
    EXPECT_NE(screen.find("processes: 3 merged:"), std::string::npos) << screen;
    EXPECT_NE(screen.find("; PSS "), std::string::npos) << "a tree's RSS counts shared pages in each\n" << screen;
    leak_second_batch_and_quit(pane, "the leak's line");
}

// By native site too: the workers' records of one stack merge into one row, whose id changes when
// the first-forked worker's blocks arrive; the row keeps its growth since the view started.
TEST_F(RubyTop, WithChildrenAStackLeakedByTwoWorkersIsOneNativeRowThatKeepsItsGrowth) {
    start({}, "workers_leak_alike.rb");
    TmuxPane pane(top_of_target({"--children"}));
    const std::string screen = wait_for_first_batch(pane, "the leak's stack");
    EXPECT_NE(screen.find("GROWTH  SITE\n"), std::string::npos) << screen;
    EXPECT_NE(screen.find("processes: 3 merged:"), std::string::npos) << screen;
    leak_second_batch_and_quit(pane, "the leak's stack");
}

// Under --by ruby a line keeps the allocations whose stacks match, anywhere in their Ruby
// backtrace: the script's own lines, and the gems' lines it called (its require of fiddle), but no
// line that Ruby's boot reached without it, nor the allocations without a Ruby frame.
TEST_F(RubyTop, FocusKeepsTheRubyLinesItMatches) {
    start();
    TmuxPane pane(top_of_target({"--by", "ruby", "--focus", "leak_in_batches"}));
    const std::string screen = wait_for_first_batch(pane, "the leak's line");
    const std::regex focus_line(R"(focus \(--focus leak_in_batches\): (\d+) of (\d+) Ruby lines, )");
    std::smatch counts;
    ASSERT_TRUE(std::regex_search(screen, counts, focus_line)) << screen;
    EXPECT_GT(std::stoul(counts[1]), 0u) << screen;
    EXPECT_LT(std::stoul(counts[1]), std::stoul(counts[2])) << screen;
    EXPECT_EQ(screen.find("(no Ruby frame)"), std::string::npos) << screen;
    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
