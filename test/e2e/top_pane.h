// `leakwrap-report top` in a real terminal, for the tests that drive it: tmux runs it in a pane
// of a server of its own; capture-pane reads the screen, send-keys types, and a shell after it
// says how it exited and whether the terminal came back (stty, tmux's alternate-screen and
// cursor flags).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {

namespace paths {
extern const std::string tmux;  // empty when tmux is not installed
}  // namespace paths

// A tmux server of its own (its socket in a directory of its own), one session whose pane runs
// `leakwrap-report top` and then a shell that reports on the terminal.
class TmuxPane {
public:
    explicit TmuxPane(const std::vector<std::string>& top_arguments);
    ~TmuxPane();
    TmuxPane(const TmuxPane&) = delete;
    TmuxPane& operator=(const TmuxPane&) = delete;

    std::string screen();
    void send_keys(const std::string& keys);
    // A tmux format of the pane, e.g. #{alternate_on}.
    std::string pane_format(const std::string& format);

    // The screen once `ready` holds for it; fails the test (and returns the last screen) if it
    // does not within the deadline.
    std::string wait_for(const std::function<bool(const std::string&)>& ready, const std::string& what);
    std::string wait_for_text(const std::string& text);

    // leakwrap-report in the pane: the child of the pane's shell.
    pid_t top_pid();

    // After top ended: it said `status`, and the terminal is as the shell left it.
    void expect_exit_and_terminal_restored(int status);

private:
    std::string tmux(std::vector<std::string> arguments);

    TemporaryDirectory directory_;
    std::string socket_;
};

// A size of less than 1 MiB as the view writes it: "800 B", "1.2 KiB".
std::string shown_bytes(std::size_t bytes);

// Whether a row of the table (columns ID LIVE BLOCKS GROWTH and the label) whose label starts
// with `label` shows these live bytes, live blocks and (not negative) growth.
bool table_row_shows(const std::string& screen, const std::string& label, std::size_t live, std::size_t blocks,
                     std::size_t growth);

}  // namespace leakwrap::e2e
