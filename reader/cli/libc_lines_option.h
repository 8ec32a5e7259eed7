// --libc-lines, the same on a report and on every subcommand that symbolizes (watch, top, serve).
#pragma once

#include "symbolizer.h"

#include <CLI/CLI.hpp>

namespace leakwrap {

inline void add_libc_lines_flag(CLI::App& app, SymbolizerOptions& options) {
    app.add_flag("--libc-lines", options.libc_lines,
                 "Give glibc's frames (libc.so.6, the dynamic loader ld-linux*) their file, line "
                 "and inlined functions from its debug info, where installed (libc6-dbg), at some "
                 "16 MiB more memory: libdw inflates its compressed DWARF whole; by default they "
                 "are named from the symbol table alone (default: off)");
}

}  // namespace leakwrap
