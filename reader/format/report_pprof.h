// The pprof profile format (reader/format/profile.proto, gzip-compressed): read by `go tool pprof`,
// Pyroscope and Parca. One sample per report row, with four values: live_space (bytes),
// live_objects, alloc_space (bytes) and alloc_objects; live_space is the default.
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

// Every row, whatever --top says: pprof ranks, filters and sums by itself. Locations carry the
// resolved function, file and line, so pprof needs no binaries; mappings carry the modules'
// paths and build-ids. The Ruby location is a location of its own, innermost.
void write_pprof_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
