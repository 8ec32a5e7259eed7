// The OpenMetrics text format (Prometheus, and node_exporter's textfile collector): the totals,
// the exact size-class bins, and the top rows of the report as labelled gauges.
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

// Families, every sample labelled pid="<pid>" so that several processes' files never collide:
//   leakwrap_live_bytes, leakwrap_live_blocks               gauges, whole process, exact
//   leakwrap_allocations_total, leakwrap_frees_total        counters, whole process, exact
//   leakwrap_bin_live_bytes{class_limit="320"}              gauge per size class ever used
//   leakwrap_site_live_bytes{site,function[,ruby]}          gauges per row, the --top N rows
//   leakwrap_site_live_blocks{site,function[,ruby]}         ranked by --sort
void write_openmetrics_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
