// `leakwrap-report top` in a real terminal (top_pane.h) on steady_leak under the preload.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "steady_leak.h"
#include "top_pane.h"

namespace leakwrap::e2e {
namespace {

using namespace steady_leak;

// steady_leak ticks once on SIGUSR1, then waits this long for the next: one tick in the test.
constexpr const char* kOneTickPeriodMs = "1000000";

// How the table labels a site of `function`.
std::string site(const std::string& function) { return function + " (steady_leak.cpp:"; }

// The line of the table whose site label starts with `function`; npos if there is none.
std::size_t row_line(const std::string& screen, const std::string& function) {
    return screen.find("  " + site(function));
}

class Top : public ::testing::Test {
protected:
    void SetUp() override {
        if (paths::tmux.empty())
            GTEST_SKIP() << "tmux is not installed, so top cannot be driven in a terminal "
                            "(scripts/setup.sh installs it)";
        target_ = std::make_unique<Target>(std::vector<std::string>{paths::program("steady_leak"), kOneTickPeriodMs},
                                           Environment::profiled());
        target_->wait_ready();
    }
    void TearDown() override {
        if (target_) {
            EXPECT_EQ(target_->release_and_wait(), 0);
        }
    }

    std::vector<std::string> top_of_target() const { return {std::to_string(target_->pid()), "--interval", "200ms"}; }

    std::unique_ptr<Target> target_;
};

TEST_F(Top, ShowsTheLeakWithTotalsAndRssAndResortsByGrowthOnAKey) {
    TmuxPane pane(top_of_target());
    // Before the tick only main's stdout buffer is there; growth counts from this first sample.
    std::string screen =
        pane.wait_for([](const std::string& s) { return row_line(s, "main") != std::string::npos; }, "main's row");
    EXPECT_NE(screen.find("leakwrap-report top  pid " + std::to_string(target_->pid())), std::string::npos) << screen;
    EXPECT_NE(screen.find("sorted by live bytes"), std::string::npos) << screen;
    EXPECT_NE(screen.find("\nRSS "), std::string::npos) << screen;
    // RSS in its parts, as the report explains it: the program's heap is glibc's main heap.
    EXPECT_NE(screen.find("\nRSS explained: malloc's heaps "), std::string::npos) << screen;

    kill(target_->pid(), SIGUSR1);  // one tick: the leak's 4 blocks, 2 of the cache's
    const std::size_t leaked = kLeaksPerTick * kLeakSize;
    const std::size_t cached = kCacheInsertsPerTick * kCacheEntrySize;
    screen = pane.wait_for(
        [&](const std::string& s) {
            return table_row_shows(s, site("leak_steadily()"), leaked, kLeaksPerTick, leaked);
        },
        "the leak's row after one tick");
    EXPECT_TRUE(table_row_shows(screen, site("fill_bounded_cache()"), cached, kCacheInsertsPerTick, cached)) << screen;
    EXPECT_NE(screen.find("+" + shown_bytes(leaked + cached) + " since the view started"), std::string::npos) << screen;
    // By live bytes: main's 4 KiB buffer, then the cache, then the leak.
    EXPECT_LT(row_line(screen, "main"), row_line(screen, "fill_bounded_cache()")) << screen;
    EXPECT_LT(row_line(screen, "fill_bounded_cache()"), row_line(screen, "leak_steadily()")) << screen;

    pane.send_keys("g");
    screen = pane.wait_for_text("sorted by growth since the view started");
    // By growth: the cache, the leak, then main, which did not grow.
    EXPECT_LT(row_line(screen, "fill_bounded_cache()"), row_line(screen, "leak_steadily()")) << screen;
    EXPECT_LT(row_line(screen, "leak_steadily()"), row_line(screen, "main")) << screen;

    pane.send_keys("l");
    screen = pane.wait_for_text("sorted by live bytes");
    EXPECT_LT(row_line(screen, "main"), row_line(screen, "fill_bounded_cache()")) << screen;

    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

TEST_F(Top, CtrlCEndsItAndRestoresTheTerminal) {
    TmuxPane pane(top_of_target());
    pane.wait_for_text("sorted by live bytes");
    pane.send_keys("C-c");
    pane.expect_exit_and_terminal_restored(0);
}

// Samples that take longer than the interval leave no pause between them: q and the signals are
// read anyway, before each sample.
TEST_F(Top, QuitsWhenEachSampleTakesLongerThanTheInterval) {
    TmuxPane pane({std::to_string(target_->pid()), "--interval", "1ms"});
    pane.wait_for_text("sorted by live bytes");
    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

TEST_F(Top, SigtermEndsItAndRestoresTheTerminal) {
    TmuxPane pane(top_of_target());
    pane.wait_for_text("sorted by live bytes");
    const pid_t top = pane.top_pid();
    ASSERT_GT(top, 0);
    kill(top, SIGTERM);
    pane.expect_exit_and_terminal_restored(0);
}

// A segment that turns unreadable while its process runs is an error: exit 1 with the message,
// on a terminal put back as it was.
TEST_F(Top, AnErrorWhileItRunsRestoresTheTerminalBeforeTheMessage) {
    TmuxPane pane(top_of_target());
    pane.wait_for_text("sorted by live bytes");
    const std::string segment = segment_path(target_->pid());
    {
        std::ofstream garbage(segment + ".garbage", std::ios::binary);
        garbage << std::string(4096, 'x');
    }
    // The process keeps its mapping of the real segment; the path now names garbage.
    std::filesystem::rename(segment + ".garbage", segment);
    pane.expect_exit_and_terminal_restored(1);
    EXPECT_NE(pane.screen().find("leakwrap-report: error: "), std::string::npos) << pane.screen();
    EXPECT_EQ(target_->release_and_wait(), 0);
    target_.reset();
    std::filesystem::remove(segment);  // the garbage, if the process's exit left it
}

TEST_F(Top, WhenTheProcessExitsItsLastSampleStaysOnScreen) {
    TmuxPane pane(top_of_target());
    pane.wait_for_text("sorted by live bytes");
    const pid_t pid = target_->pid();
    EXPECT_EQ(target_->release_and_wait(), 0);
    target_.reset();
    const std::string screen = pane.wait_for_text("its last sample stays on screen");
    EXPECT_NE(screen.find("process " + std::to_string(pid) + " exited: "), std::string::npos) << screen;
    EXPECT_NE(row_line(screen, "main"), std::string::npos) << screen;
    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

TEST_F(Top, RefusesAStdoutThatIsNoTerminalAndSuggestsWatch) {
    const Completed top = run_report({"top", std::to_string(target_->pid())});
    EXPECT_EQ(top.exit_code, 2) << top.err;
    EXPECT_NE(top.err.find("stdout is not one"), std::string::npos) << top.err;
    EXPECT_NE(top.err.find("leakwrap-report watch " + std::to_string(target_->pid()) + " --out FILE"),
              std::string::npos)
        << top.err;
    EXPECT_EQ(top.out, "");
}

}  // namespace
}  // namespace leakwrap::e2e
