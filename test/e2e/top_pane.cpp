#include "top_pane.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace leakwrap::e2e {

namespace paths {
const std::string tmux = LEAKWRAP_TMUX;
}  // namespace paths

namespace {
constexpr auto kScreenTimeout = 20s;
}  // namespace

TmuxPane::TmuxPane(const std::vector<std::string>& top_arguments)
    : socket_((directory_.path() / "tmux.socket").string()) {
    std::string command = paths::report_tool + " top";
    for (const std::string& argument : top_arguments) command += " " + argument;
    // After top: its exit status, then whether the line discipline is back to canonical mode
    // with echo (top turns both off), then a shell that keeps the pane open.
    command +=
        "; echo \"top exited $?\"; echo \"stty: $(stty -a | tr -s ' ;' '\\n\\n' | "
        "grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"; exec sleep 600";
    tmux({"-f", "/dev/null", "new-session", "-d", "-x", "150", "-y", "40", "-s", "top", command});
}

TmuxPane::~TmuxPane() { run({paths::tmux, "-S", socket_, "kill-server"}, Environment::bare()); }

std::string TmuxPane::screen() { return tmux({"capture-pane", "-p", "-t", "top"}); }

void TmuxPane::send_keys(const std::string& keys) { tmux({"send-keys", "-t", "top", keys}); }

std::string TmuxPane::pane_format(const std::string& format) {
    std::string value = tmux({"display-message", "-p", "-t", "top", format});
    while (!value.empty() && value.back() == '\n') value.pop_back();
    return value;
}

std::string TmuxPane::wait_for(const std::function<bool(const std::string&)>& ready, const std::string& what) {
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

std::string TmuxPane::wait_for_text(const std::string& text) {
    return wait_for([&](const std::string& screen) { return screen.find(text) != std::string::npos; },
                    "\"" + text + "\"");
}

pid_t TmuxPane::top_pid() {
    const std::string shell = pane_format("#{pane_pid}");
    std::ifstream children("/proc/" + shell + "/task/" + shell + "/children");
    pid_t child = -1;
    children >> child;
    return child;
}

void TmuxPane::expect_exit_and_terminal_restored(int status) {
    const std::string after = wait_for_text("top exited ");
    EXPECT_NE(after.find("top exited " + std::to_string(status) + "\n"), std::string::npos) << after;
    wait_for_text("stty: ");
    // capture-pane drops the spaces at the end of a line.
    EXPECT_NE(screen().find("stty: icanon echo\n"), std::string::npos) << screen();
    EXPECT_EQ(pane_format("#{alternate_on}"), "0") << "still on the alternate screen";
    EXPECT_EQ(pane_format("#{cursor_flag}"), "1") << "the cursor is still hidden";
    EXPECT_EQ(after.find("sorted by"), std::string::npos) << "the view is still there:\n" << after;
}

std::string TmuxPane::tmux(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), {paths::tmux, "-S", socket_});
    const Completed result = run(arguments, Environment::bare().set("TMUX", ""));
    if (result.exit_code != 0) throw std::runtime_error("tmux " + arguments[3] + " failed: " + result.err);
    return result.out;
}

std::string shown_bytes(std::size_t bytes) {
    char text[32];
    if (bytes < 1024)
        std::snprintf(text, sizeof(text), "%zu B", bytes);
    else
        std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return text;
}

bool table_row_shows(const std::string& screen, const std::string& label, std::size_t live, std::size_t blocks,
                     std::size_t growth) {
    // A size is a number and its unit: "89.1 KiB", "+0 B".
    static const std::regex row(R"(^ *[0-9]+ +(\S+ \S+) +([0-9]+) +\+(\S+ \S+)  (.*)$)");
    std::istringstream lines(screen);
    for (std::string line; std::getline(lines, line);) {
        std::smatch cells;
        if (std::regex_match(line, cells, row) && cells[4].str().starts_with(label) && cells[1] == shown_bytes(live) &&
            cells[2] == std::to_string(blocks) && cells[3] == shown_bytes(growth))
            return true;
    }
    return false;
}

}  // namespace leakwrap::e2e
