// --hide-runtime: the frames of a stack that say nothing about where the program leaks — the C
// and C++ runtimes and the Ruby VM (is_runtime_module, the rule that names sites), and the
// program's start (_start) — left out of the stacks a report shows.
#pragma once

#include "report_rows.h"
#include "symbolizer.h"

#include <cstddef>
#include <vector>

namespace leakwrap {

bool is_runtime_frame(const ResolvedFrame& frame);

// The indexes into row.frames of the addresses whose frames (an address's inlined functions
// and the function holding them go together) to show, innermost first: all of them, or with
// hide_runtime those outside the runtimes. A row whose native frames are all runtime keeps its
// innermost one when it has no Ruby frame to name it, so that no row is left without a frame.
std::vector<std::size_t> shown_frame_indexes(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime);

}  // namespace leakwrap
