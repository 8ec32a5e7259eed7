// The folded-stacks format of flame graphs (flamegraph.pl, inferno, speedscope): one line per
// report row, "outermost;…;innermost value". It also fixes how the profile formats (folded,
// OpenMetrics, pprof) name a frame, so that one site reads the same in all of them.
#pragma once

#include "report_input.h"

#include <ostream>
#include <string>
#include <vector>

namespace leakwrap {

// The function; "module+0xoffset" when the module has no symbol for the address; else the address.
std::string frame_name(const ResolvedFrame& frame);

// "ruby:app.rb:12": a Ruby location stands as a frame of its own.
std::string ruby_frame_name(const RubyLocation& location);

// Stands for the native stack of a row that has none.
inline constexpr const char* kNoStackFrame = "[no stack]";

// One frame of a row as the profile formats show it.
struct RowFrame {
    std::string name;
    const ResolvedFrame* native = nullptr;  // a native frame, as the symbolizer resolved it
    const RubyLocation* ruby = nullptr;     // the Ruby location, a frame of its own
};

// A row's frames, innermost first: the native frames (those outside the runtimes with
// hide_runtime, see shown_frame_indexes; an address with inlined functions gives a frame for
// each, see AddressFrames), then the Ruby backtrace (if any); one frame named "[overflow]" for
// the overflow row and "[no stack]" for a row without any frame, so that the list is never
// empty. Pointers into the row and the symbolizer's cache.
std::vector<RowFrame> row_frames(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime = false);

// Every row with a non-zero value (--value: live or allocated bytes), whatever --top says: a
// flame graph of some rows would misstate the whole.
void write_folded_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
