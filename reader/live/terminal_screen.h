// The terminal while `top` runs: the alternate screen (so the shell's screen comes back as it
// was), no cursor, keys read one at a time without echo; and all of that undone when it ends —
// on q, on Ctrl-C or SIGTERM (taken as events, never as the default action that would kill the
// process before it restores anything) and when an error unwinds through it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <signal.h>
#include <termios.h>

namespace leakwrap {

class TerminalScreen {
public:
    // Draws on `output`, which must be a terminal (the caller checks, to say what to use
    // instead); reads keys from `input` when it is a terminal too. top gives it stdin and stdout,
    // a test a pseudo-terminal.
    TerminalScreen(int input, int output);
    ~TerminalScreen();
    TerminalScreen(const TerminalScreen&) = delete;
    TerminalScreen& operator=(const TerminalScreen&) = delete;

    struct Size {
        std::size_t columns = 80;
        std::size_t lines = 24;
    };
    Size size() const;

    // Replaces what is on the screen with these lines, in one write.
    void draw(const std::vector<std::string>& lines);

    struct Event {
        enum class Kind { key, stop, resize, timeout };
        Kind kind = Kind::timeout;
        char key = 0;
    };
    // The next key, stop signal (SIGINT, SIGTERM, SIGHUP) or resize, or timeout once `wait` has
    // passed.
    Event next_event(std::chrono::milliseconds wait);

private:
    void write_all(const std::string& text);

    int input_;
    int output_;
    bool keys_ = false;  // the input is a terminal in raw mode
    termios saved_{};
    sigset_t previous_mask_{};
    int signal_fd_ = -1;
};

}  // namespace leakwrap
