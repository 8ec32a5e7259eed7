// `leakwrap-report top PID`: a live view of a process's sites in the terminal, refreshed in place
// (live_view.h draws it, terminal_screen.h holds the terminal).
#include "duration_option.h"
#include "focus_options.h"
#include "grouping_option.h"
#include "libc_lines_option.h"
#include "live_view.h"
#include "quiet_validator.h"
#include "subcommands.h"
#include "terminal_screen.h"
#include "watch.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <iostream>
#include <memory>

namespace leakwrap {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitUsageError = 2;

struct TopCommandLine {
    int64_t pid = 0;
    std::string interval = "2s";
    std::string sort = "live";
    std::string by = "native";
    bool children = false;
    bool full_names = false;
    FocusCommandLine focus;
    SymbolizerOptions symbolizer;
};

// Just what owner_state() looks at, so that the last sample's sites need not be kept twice.
Snapshot identity_of(const Snapshot& snapshot) {
    Snapshot identity;
    identity.pid = snapshot.pid;
    identity.start_time_ticks = snapshot.start_time_ticks;
    identity.boot_id = snapshot.boot_id;
    identity.process_state = snapshot.process_state;
    return identity;
}

// Keys until the next sample is due; false when the view is to end (q, Ctrl-C, SIGTERM).
// A process that is gone has no next sample: then only a key or a signal ends the wait.
bool wait_for_next_sample(TerminalScreen& screen, LiveView& view, Clock::time_point due, bool gone) {
    const auto redraw = [&] {
        const auto size = screen.size();
        screen.draw(view.render(size.columns, size.lines));
    };
    redraw();
    for (;;) {
        // Asked even when the next sample is already due (one that took longer than the interval):
        // otherwise keys and signals would wait for a pause between samples that never comes.
        const auto left = std::max(std::chrono::milliseconds(0),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()));
        const auto event = screen.next_event(gone ? std::chrono::milliseconds(60'000) : left);
        if (!gone && event.kind == TerminalScreen::Event::Kind::timeout) return true;
        switch (event.kind) {
            case TerminalScreen::Event::Kind::stop: return false;
            case TerminalScreen::Event::Kind::resize: redraw(); break;
            case TerminalScreen::Event::Kind::key:
                if (event.key == 'q' || event.key == 'Q') return false;
                if (event.key == 'l' || event.key == 'g') {
                    view.set_order(event.key == 'l' ? LiveOrder::live : LiveOrder::growth);
                    redraw();
                }
                if (event.key == 'r') {
                    view.set_grouping(view.grouping() == Grouping::native ? Grouping::ruby : Grouping::native);
                    redraw();
                }
                break;
            case TerminalScreen::Event::Kind::timeout: break;
        }
    }
}

int run_top(const TopCommandLine& line, const TreeReader& read_process) {
    if (isatty(STDOUT_FILENO) == 0) {
        std::cerr << "leakwrap-report: error: top draws on a terminal and stdout is not one; to "
                     "record a process over time use: leakwrap-report watch "
                  << line.pid << " --out FILE\n";
        return kExitUsageError;
    }
    const auto pid = static_cast<pid_t>(line.pid);
    // The first sample is taken before the terminal is touched, so that its errors read plainly.
    Snapshot first = read_process(pid, line.children);
    if (const OwnerState state = owner_state(first); state != OwnerState::alive)
        throw std::runtime_error(gone_reason(pid, state) +
                                 ": nothing to show live (see "
                                 "leakwrap-report " +
                                 std::to_string(pid) + " for its last state)");
    Snapshot identity = identity_of(first);
    LiveView view({*live_order_from_name(line.sort), *grouping_from_name(line.by), line.focus.patterns(),
                   line.full_names, line.symbolizer});
    const auto interval = *parse_duration(line.interval);
    const Clock::time_point start = Clock::now();
    view.update(std::move(first), 0);

    TerminalScreen screen(STDIN_FILENO, STDOUT_FILENO);
    bool gone = false;
    for (Clock::time_point due = start + interval;; due = std::max(due + interval, Clock::now())) {
        if (!wait_for_next_sample(screen, view, due, gone)) return 0;
        view.release_sample();  // two samples of a large process at once would double the peak
        Snapshot snapshot;
        try {
            snapshot = read_process(pid, line.children);
        } catch (const std::exception&) {
            // A process that exits normally takes its segment with it; anything else while it
            // runs is an error (the screen restores the terminal as the error unwinds).
            if (owner_state(identity) == OwnerState::alive) throw;
            view.mark_gone("process " + std::to_string(pid) + " exited");
            gone = true;
            continue;
        }
        if (const OwnerState state = owner_state(snapshot); state != OwnerState::alive) {
            view.mark_gone(gone_reason(pid, state));
            gone = true;
            continue;
        }
        identity = identity_of(snapshot);
        view.update(std::move(snapshot), std::chrono::duration<double>(Clock::now() - start).count());
    }
}

}  // namespace

Subcommand add_top_subcommand(CLI::App& app, TreeReader read_process) {
    auto line = std::make_shared<TopCommandLine>();
    CLI::App* top =
        app.add_subcommand("top",
                           "A live view of a process in the terminal, refreshed in place: its totals, RSS and the "
                           "sites (or Ruby lines) holding the most live bytes or grown most since the view started. "
                           "Keys: l sorts by live bytes, g by growth, r switches between rows by native site and by "
                           "Ruby line, q quits (so do Ctrl-C and SIGTERM). Needs a terminal on stdout (use watch to "
                           "record)");
    top->add_option("pid", line->pid, "Process to show; it must be alive")
        ->required()
        ->check(quiet(CLI::Range(int64_t{1}, int64_t{INT_MAX})));
    top->add_option("--interval", line->interval, "Time between samples: 500ms, 5s, 2m, 1h (default: 2s)")
        ->type_name("DURATION")
        ->check(quiet(CLI::Validator(duration_error, "DURATION")));
    top->add_option("--sort", line->sort,
                    "Rank sites by live (live bytes) or growth (live bytes gained since the view "
                    "started) first; the keys l and g switch (default: live)")
        ->check(CLI::IsMember({"live", "growth"}));
    add_grouping_option(*top, line->by, "; the key r switches");
    top->add_flag("--children", line->children,
                  "Show the pid and its live descendants as one process tree, found anew at "
                  "every sample (default: off)");
    add_focus_options(*top, line->focus,
                      "a native frame's function, source file or module path, or a Ruby frame's "
                      "file:line (a native site is matched once, when it first appears; under --by "
                      "ruby each sample keeps of a Ruby line the allocations whose native frames or "
                      "Ruby backtrace match)");
    top->add_flag("--full-names", line->full_names,
                  "Show the sites' C++ names in full instead of shortened (default: off)");
    add_libc_lines_flag(*top, line->symbolizer);
    return {top, [line, read_process] { return run_top(*line, read_process); }};
}

}  // namespace leakwrap
