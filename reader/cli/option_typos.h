// Suggestions for mistyped options and subcommands, for the usage error that names them.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace leakwrap {

// The option ("--format") of the app or of a subcommand it parsed, or the subcommand ("watch"),
// that `typed` most likely meant: `typed` its prefix, or at most two edits away (and at most one
// per two letters). nullopt if none, and for fewer than three letters.
std::optional<std::string> closest_name(const CLI::App& app, const std::string& typed);

}  // namespace leakwrap
