// --focus and --ignore, the same on a report and on every subcommand that takes them.
#pragma once

#include "focus_patterns.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace leakwrap {

struct FocusCommandLine {
    std::vector<std::string> focus;
    std::vector<std::string> ignore;

    // Compiled; the validators have checked that every pattern compiles.
    FocusPatterns patterns() const { return FocusPatterns(focus, ignore); }
};

// `matched` says what a pattern is matched against on this command, for its --help.
void add_focus_options(CLI::App& app, FocusCommandLine& line, const std::string& matched);

}  // namespace leakwrap
