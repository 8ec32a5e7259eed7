// `leakwrap-report top` in a real terminal: tmux runs it in a pane on steady_leak under the
// preload; capture-pane reads the screen, send-keys types, and a shell after it says how it
// exited and whether the terminal came back (stty, tmux's alternate-screen and cursor flags).
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "harness.h"
#include "steady_leak.h"

namespace leakwrap::e2e {
namespace {

using namespace steady_leak;

// steady_leak ticks once on SIGUSR1, then waits this long for the next: one tick in the test.
constexpr const char* kOneTickPeriodMs = "1000000";
constexpr auto kScreenTimeout = 20s;

// "1.2 KiB", as the view writes sizes of 1 KiB and more.
std::string kib(std::size_t bytes) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return text;
}

// A tmux server of its own (its socket in a directory of its own), one session whose pane runs
// `leakwrap-report top` and then a shell that reports on the terminal.
class TmuxPane {
public:
    explicit TmuxPane(const std::vector<std::string>& top_arguments) {
        char directory[] = "/tmp/leakwrap-top-test.XXXXXX";
        if (mkdtemp(directory) == nullptr) throw std::runtime_error("mkdtemp");
        directory_ = directory;
        socket_ = directory_ + "/tmux.socket";
        std::string command = paths::report_tool + " top";
        for (const std::string& argument : top_arguments) command += " " + argument;
        // After top: its exit status, then whether the line discipline is back to canonical mode
        // with echo (top turns both off), then a shell that keeps the pane open.
        command += "; echo \"top exited $?\"; echo \"stty: $(stty -a | tr -s ' ;' '\\n\\n' | "
                   "grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"; exec sleep 600";
        tmux({"-f", "/dev/null", "new-session", "-d", "-x", "150", "-y", "40", "-s", "top", command});
    }
    ~TmuxPane() {
        run({LEAKWRAP_TMUX, "-S", socket_, "kill-server"}, Environment::bare());
        std::filesystem::remove_all(directory_);
    }
    TmuxPane(const TmuxPane&) = delete;
    TmuxPane& operator=(const TmuxPane&) = delete;

    std::string screen() { return tmux({"capture-pane", "-p", "-t", "top"}); }
    void send_keys(const std::string& keys) { tmux({"send-keys", "-t", "top", keys}); }
    // A tmux format of the pane, e.g. #{alternate_on}.
    std::string pane_format(const std::string& format) {
        std::string value = tmux({"display-message", "-p", "-t", "top", format});
        while (!value.empty() && value.back() == '\n') value.pop_back();
        return value;
    }

    // The screen once `ready` holds for it; fails the test (and returns the last screen) if it
    // does not within the deadline.
    std::string wait_for(const std::function<bool(const std::string&)>& ready, const std::string& what) {
        const auto deadline = std::chrono::steady_clock::now() + kScreenTimeout;
        std::string last;
        while (std::chrono::steady_clock::now() < deadline) {
            last = screen();
            if (ready(last)) return last;
            std::this_thread::sleep_for(100ms);
        }
        ADD_FAILURE() << "the screen never showed " << what << "; it shows:\n" << last;
        return last;
    }
    std::string wait_for_text(const std::string& text) {
        return wait_for([&](const std::string& screen) { return screen.find(text) != std::string::npos; },
                        "\"" + text + "\"");
    }

    // leakwrap-report in the pane: the child of the pane's shell.
    pid_t top_pid() {
        const std::string shell = pane_format("#{pane_pid}");
        std::ifstream children("/proc/" + shell + "/task/" + shell + "/children");
        pid_t child = -1;
        children >> child;
        return child;
    }

    // After top ended: it said `status`, and the terminal is as the shell left it.
    void expect_exit_and_terminal_restored(int status) {
        const std::string after = wait_for_text("top exited ");
        EXPECT_NE(after.find("top exited " + std::to_string(status) + "\n"), std::string::npos) << after;
        wait_for_text("stty: ");
        // capture-pane drops the spaces at the end of a line.
        EXPECT_NE(screen().find("stty: icanon echo\n"), std::string::npos) << screen();
        EXPECT_EQ(pane_format("#{alternate_on}"), "0") << "still on the alternate screen";
        EXPECT_EQ(pane_format("#{cursor_flag}"), "1") << "the cursor is still hidden";
        EXPECT_EQ(after.find("sorted by"), std::string::npos) << "the view is still there:\n" << after;
    }

private:
    std::string tmux(std::vector<std::string> arguments) {
        arguments.insert(arguments.begin(), {LEAKWRAP_TMUX, "-S", socket_});
        const Completed result = run(arguments, Environment::bare().set("TMUX", ""));
        if (result.exit_code != 0)
            throw std::runtime_error("tmux " + arguments[3] + " failed: " + result.err);
        return result.out;
    }

    std::string directory_;
    std::string socket_;
};

// The line of the table whose site label starts with `function`; npos if there is none.
std::size_t row_line(const std::string& screen, const std::string& function) {
    return screen.find("  " + function + " (steady_leak.cpp:");
}

// Whether the table has the row of `function` with these live bytes, live blocks and growth
// (columns ID LIVE BLOCKS GROWTH SITE).
bool table_row_shows(const std::string& screen, const std::string& function, std::size_t live,
                     std::size_t blocks, std::size_t growth) {
    const std::size_t at = row_line(screen, function);
    if (at == std::string::npos) return false;
    const std::size_t start = screen.rfind('\n', at) + 1;
    const std::string line = screen.substr(start, screen.find('\n', at) - start);
    const std::regex cells("^ *[0-9]+ +" + std::regex_replace(kib(live), std::regex("\\."), "\\.") +
                           " +" + std::to_string(blocks) + " +\\+" +
                           std::regex_replace(kib(growth), std::regex("\\."), "\\.") + "  ");
    return std::regex_search(line, cells);
}

class Top : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(LEAKWRAP_TMUX).empty())
            GTEST_SKIP() << "tmux is not installed, so top cannot be driven in a terminal "
                            "(scripts/setup.sh installs it)";
        target_ = std::make_unique<Target>(
            std::vector<std::string>{paths::program("steady_leak"), kOneTickPeriodMs},
            Environment::profiled());
        target_->wait_ready();
    }
    void TearDown() override {
        if (target_) {
            EXPECT_EQ(target_->release_and_wait(), 0);
        }
    }

    std::vector<std::string> top_of_target() const {
        return {std::to_string(target_->pid()), "--interval", "200ms"};
    }

    std::unique_ptr<Target> target_;
};

TEST_F(Top, ShowsTheLeakWithTotalsAndRssAndResortsByGrowthOnAKey) {
    TmuxPane pane(top_of_target());
    // Before the tick only main's stdout buffer is there; growth counts from this first sample.
    std::string screen = pane.wait_for(
        [](const std::string& s) { return row_line(s, "main") != std::string::npos; }, "main's row");
    EXPECT_NE(screen.find("leakwrap-report top  pid " + std::to_string(target_->pid())), std::string::npos) << screen;
    EXPECT_NE(screen.find("sorted by live bytes"), std::string::npos) << screen;
    EXPECT_NE(screen.find("\nRSS "), std::string::npos) << screen;

    kill(target_->pid(), SIGUSR1);  // one tick: the leak's 4 blocks, 2 of the cache's
    const std::size_t leaked = kLeaksPerTick * kLeakSize;
    const std::size_t cached = kCacheInsertsPerTick * kCacheEntrySize;
    screen = pane.wait_for(
        [&](const std::string& s) { return table_row_shows(s, "leak_steadily()", leaked, kLeaksPerTick, leaked); },
        "the leak's row after one tick");
    EXPECT_TRUE(table_row_shows(screen, "fill_bounded_cache()", cached, kCacheInsertsPerTick, cached)) << screen;
    EXPECT_NE(screen.find("+" + kib(leaked + cached) + " since the view started"), std::string::npos) << screen;
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
