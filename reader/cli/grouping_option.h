// --by, the same on a report and on top.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace leakwrap {

// `switching` says how the command changes the grouping later, for its --help; empty if it
// cannot.
inline void add_grouping_option(CLI::App& app, std::string& by, const std::string& switching = "") {
    app.add_option("--by", by,
                   "One row per native call site, its size classes merged, with its Ruby "
                   "file:line if any (native), or one row per Ruby file:line over all native "
                   "stacks, plus one for allocations without a Ruby frame (ruby)" +
                       switching + " (default: native)")
        ->check(CLI::IsMember({"native", "ruby"}));
}

}  // namespace leakwrap
