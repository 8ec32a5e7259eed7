// --born-after and --born-before: which records a report keeps by when their blocks were
// allocated (birth_window.h), the same on a report and on serve's queries.
#pragma once

#include "birth_window.h"
#include "duration_option.h"

#include <CLI/CLI.hpp>

#include <string>

namespace leakwrap {

struct BirthCommandLine {
    std::string after;
    std::string before;

    // The validators have checked both durations.
    BirthWindow window() const {
        BirthWindow window;
        if (!after.empty()) window.after_ns = parse_duration_ns(after);
        if (!before.empty()) window.before_ns = parse_duration_ns(before);
        return window;
    }
};

inline void add_birth_options(CLI::App& app, BirthCommandLine& line) {
    const auto check = CLI::Validator(duration_error, "DURATION", "duration");
    app.add_option("--born-after", line.after,
                   "Keep only the live blocks allocated after this time since the process "
                   "started (500ms, 30s, 10m, 2h), to the birth grid's precision: a time inside "
                   "a cell of the grid is taken to the cell's start; the grid is 0.5 s cells "
                   "until 4 s, then cells of 1/8 of the time since the start (default: all)")
        ->type_name("DURATION")
        ->check(check);
    app.add_option("--born-before", line.before,
                   "Keep only the live blocks allocated before this time since the process "
                   "started, to the grid's precision as --born-after; with it, a window "
                   "(default: all)")
        ->type_name("DURATION")
        ->check(check);
}

}  // namespace leakwrap
