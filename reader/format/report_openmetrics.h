// The two metrics text formats: Prometheus' text exposition format, which node_exporter's textfile
// collector and every Prometheus read, and OpenMetrics, for a scraper that asks for it. Both carry
// the same families: the totals, the size-class bins (exact, but in sampling mode under glibc),
// and the top rows of the report as labelled gauges.
#pragma once

#include "report_input.h"

#include <memory>
#include <ostream>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class MetricsDialect { prometheus, openmetrics };

// The HTTP Content-Type of each.
std::string_view metrics_content_type(MetricsDialect dialect);

// Families, every sample labelled pid, exe and command of its process, so that several
// processes' samples never collide:
//   leakwrap_live_bytes, leakwrap_live_blocks               gauges, whole process
//   leakwrap_allocations_total, leakwrap_frees_total        counters, whole process
//   leakwrap_sample_interval_bytes                          gauge, LEAKWRAP_SAMPLE (0: exact)
//   leakwrap_bin_live_bytes{class_limit="320"}              gauge per size class ever used
//   leakwrap_site_live_bytes{site,function,ruby}            gauges per row, the --top N rows
//   leakwrap_site_live_blocks{site,function,ruby}           ranked by --sort
// The whole process's figures and the bins are exact, but in sampling mode under glibc
// (Snapshot::bins_estimated), where they are estimated as the sites are.
// A site's function is the innermost frame outside the runtimes (innermost_frame_outside_runtimes)
// and ruby its Ruby file:line. A counter's TYPE line names it as its samples are named, with
// _total, in Prometheus text (else the parser files the samples as untyped); OpenMetrics names the
// family without it and adds UNIT lines and the closing "# EOF". Every family lists the samples
// of all processes together, in the order given; a family without samples is left out.
void write_metrics(std::ostream& out, const std::vector<ReportInput>& processes, MetricsDialect dialect);

// The same, a process at a time: add() takes what the families need of a process (its totals,
// bins, memory and top rows), so that its snapshot can be given back before the next is read;
// write() puts out what write_metrics does of the processes added, in the order added. A scrape
// of every process of a puma cluster held all their snapshots at once.
class MetricsExposition {
public:
    MetricsExposition();
    ~MetricsExposition();  // where Families is complete

    void add(const ReportInput& process);
    void write(std::ostream& out, MetricsDialect dialect) const;

private:
    struct Families;
    std::unique_ptr<Families> families_;
};

}  // namespace leakwrap
