// Text from a profiled process (its command line, paths, symbol names) on its way to a terminal.
#pragma once

#include <string>
#include <string_view>

namespace leakwrap {

// `text` with every control character (C0, DEL, and C1 written as UTF-8) and every byte that is
// not part of valid UTF-8 written as \xHH, so that what a process put in its command line or
// its paths cannot move the cursor, retitle the window, hide lines or split one in two. Valid
// UTF-8 passes unchanged. Every text output (reports, --list, watch, errors) goes through it.
std::string printable(std::string_view text);

}  // namespace leakwrap
