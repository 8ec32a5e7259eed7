// top's terminal screen on a real pseudo-terminal of a fixed size: what it draws, how it reads
// keys, which signals it takes as events, and that it leaves the terminal, and the process's
// signals, as it found them.
#include "pseudo_terminal.h"
#include "terminal_screen.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace leakwrap {
namespace {

using testing::PseudoTerminal;
using Event = TerminalScreen::Event;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kEntered = "\x1b[?1049h\x1b[?25l";  // alternate screen, no cursor
constexpr std::string_view kLeft = "\x1b[?25h\x1b[?1049l";     // cursor back, main screen

// Long enough for an event that is already there, so that a missing one fails rather than hangs.
constexpr auto kEventWait = std::chrono::milliseconds(5'000);

bool same_mode(const termios& a, const termios& b) {
    return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag &&
           std::memcmp(a.c_cc, b.c_cc, sizeof(a.c_cc)) == 0;
}

termios mode_of(int terminal) {
    termios mode{};
    tcgetattr(terminal, &mode);
    return mode;
}

sigset_t blocked_signals() {
    sigset_t blocked;
    pthread_sigmask(SIG_SETMASK, nullptr, &blocked);
    return blocked;
}

class TerminalScreenTest : public ::testing::Test {
protected:
    PseudoTerminal terminal_{100, 30};
};

TEST_F(TerminalScreenTest, EntersTheAlternateScreenWithoutCursorAndLeavesItAsItFoundIt) {
    const termios before = mode_of(terminal_.terminal());
    {
        const TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
        EXPECT_EQ(terminal_.read_drawn(kEntered.size()), kEntered);
        const termios during = mode_of(terminal_.terminal());
        EXPECT_EQ(during.c_lflag & (ICANON | ECHO), 0u);  // keys as typed, not echoed
        EXPECT_NE(during.c_lflag & ISIG, 0u);             // Ctrl-C is still SIGINT
        EXPECT_EQ(during.c_cc[VMIN], 1);
        EXPECT_EQ(during.c_cc[VTIME], 0);
    }
    EXPECT_EQ(terminal_.read_rest(), kLeft);
    EXPECT_TRUE(same_mode(mode_of(terminal_.terminal()), before));
}

TEST_F(TerminalScreenTest, IsAsLargeAsTheTerminalOrEightyByTwentyFourIfItHasNoSize) {
    {
        const TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
        EXPECT_EQ(screen.size().columns, 100u);
        EXPECT_EQ(screen.size().lines, 30u);
    }
    PseudoTerminal sizeless(0, 0);
    const TerminalScreen screen(sizeless.terminal(), sizeless.terminal());
    EXPECT_EQ(screen.size().columns, 80u);
    EXPECT_EQ(screen.size().lines, 24u);
}

TEST_F(TerminalScreenTest, DrawsOverTheScreenFromItsTopLeftClearingWhatTheLinesDoNotCover) {
    TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
    terminal_.read_drawn(kEntered.size());
    screen.draw({"first line", "", "third"});
    const std::string three_lines =
        "\x1b[H"
        "first line\x1b[K\r\n"
        "\x1b[K\r\n"
        "third\x1b[K"
        "\x1b[J";
    EXPECT_EQ(terminal_.read_drawn(three_lines.size()), three_lines);
    // Fewer lines: what the last frame had below them is cleared.
    screen.draw({"one"});
    const std::string one_line =
        "\x1b[H"
        "one\x1b[K"
        "\x1b[J";
    EXPECT_EQ(terminal_.read_drawn(one_line.size()), one_line);
    screen.draw({});
    EXPECT_EQ(terminal_.read_drawn(std::strlen("\x1b[H\x1b[J")), "\x1b[H\x1b[J");
    EXPECT_EQ(terminal_.read_rest(), "");
}

TEST_F(TerminalScreenTest, ReadsKeysOneAtATime) {
    TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
    terminal_.read_drawn(kEntered.size());
    terminal_.type("gq");
    for (const char key : {'g', 'q'}) {
        const Event event = screen.next_event(kEventWait);
        EXPECT_EQ(event.kind, Event::Kind::key);
        EXPECT_EQ(event.key, key);
    }
    EXPECT_EQ(terminal_.read_rest(), "");  // not echoed
}

TEST_F(TerminalScreenTest, TimesOutWhenNothingHappens) {
    TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
    const auto wait = std::chrono::milliseconds(200);
    const Clock::time_point start = Clock::now();
    EXPECT_EQ(screen.next_event(wait).kind, Event::Kind::timeout);
    EXPECT_GE(Clock::now() - start, wait);
}

TEST_F(TerminalScreenTest, TakesStopSignalsAndResizeAsEventsInsteadOfDying) {
    TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
    raise(SIGWINCH);
    EXPECT_EQ(screen.next_event(kEventWait).kind, Event::Kind::resize);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
        raise(signal);
        EXPECT_EQ(screen.next_event(kEventWait).kind, Event::Kind::stop) << sigabbrev_np(signal);
    }
}

TEST_F(TerminalScreenTest, StopsWhenTheTerminalGoesAway) {
    TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
    terminal_.hang_up();
    EXPECT_EQ(screen.next_event(kEventWait).kind, Event::Kind::stop);
}

TEST_F(TerminalScreenTest, ReadsNoKeysFromAnInputThatIsNoTerminal) {
    int pipe_ends[2];
    ASSERT_EQ(pipe(pipe_ends), 0);
    {
        TerminalScreen screen(pipe_ends[0], terminal_.terminal());
        ASSERT_EQ(write(pipe_ends[1], "q", 1), 1);
        EXPECT_EQ(screen.next_event(std::chrono::milliseconds(200)).kind, Event::Kind::timeout);
    }
    char left = 0;
    EXPECT_EQ(read(pipe_ends[0], &left, 1), 1);  // still there for whoever reads the pipe
    EXPECT_EQ(left, 'q');
    close(pipe_ends[0]);
    close(pipe_ends[1]);
}

TEST_F(TerminalScreenTest, GivesBackTheSignalMaskAndTakesAStopSignalNotYetAnswered) {
    const sigset_t before = blocked_signals();
    {
        const TerminalScreen screen(terminal_.terminal(), terminal_.terminal());
        raise(SIGTERM);  // would end this test program if it were delivered on the way out
    }
    const sigset_t after = blocked_signals();
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGWINCH})
        EXPECT_EQ(sigismember(&after, signal), sigismember(&before, signal)) << sigabbrev_np(signal);
    sigset_t pending;
    sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGTERM));
}

}  // namespace
}  // namespace leakwrap
