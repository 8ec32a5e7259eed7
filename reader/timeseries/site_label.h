// How a site of a `--format json` report is named in time analysis: a short label for people,
// and a key that finds the same call stack in another process.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace leakwrap {

// "ruby app.rb:12" when the site has a Ruby location; "[overflow]" for the overflow row;
// otherwise the innermost frame outside the runtimes (innermost_frame_outside_runtimes; the
// innermost of all if every frame is in one) as "function (file.cpp:42)", falling back to the
// module or the address when symbols are missing.
std::string site_label(const nlohmann::json& site);

// Every frame's function and source line plus the Ruby location, joined: equal for the same
// stack in two processes of the same binaries, whatever their load addresses.
std::string site_stack_key(const nlohmann::json& site);

}  // namespace leakwrap
