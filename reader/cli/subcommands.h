// The subcommands of leakwrap-report: watch a process, rank the suspects of a series, diff
// snapshots, plot a series; serve every segment over HTTP. Each registers its options on the main parser and runs
// once CLI11 has chosen it.
#pragma once

#include "watch.h"

#include <CLI/CLI.hpp>

#include <functional>

namespace leakwrap {

// What `suspects --fail-on` exits with when it finds what it names: neither success (0) nor an
// error (1) or a usage error (2), so that CI can tell a failed gate from a broken one.
inline constexpr int kExitGateFailed = 3;

struct Subcommand {
    CLI::App* parser;          // parsed() once it was chosen on the command line
    std::function<int()> run;  // the exit status; throws std::exception on a runtime error
};

// Reads a pid's segment the way `leakwrap-report <pid> [--children]` does, with its messages.
using TreeReader = std::function<Snapshot(pid_t pid, bool children)>;

Subcommand add_watch_subcommand(CLI::App& app, TreeReader read_process);
Subcommand add_suspects_subcommand(CLI::App& app);
Subcommand add_diff_subcommand(CLI::App& app);
Subcommand add_plot_subcommand(CLI::App& app);
Subcommand add_serve_subcommand(CLI::App& app);
Subcommand add_top_subcommand(CLI::App& app, TreeReader read_process);

}  // namespace leakwrap
