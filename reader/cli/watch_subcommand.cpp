#include "duration_option.h"
#include "focus_options.h"
#include "libc_lines_option.h"
#include "output_file.h"
#include "quiet_validator.h"
#include "report_openmetrics_file.h"
#include "subcommands.h"

#include <climits>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

namespace leakwrap {
namespace {

struct WatchCommandLine {
    int64_t pid = 0;
    std::string interval = "5s";
    std::size_t count = 0;
    std::string duration;
    std::string out;
    uint64_t min_bytes = kDefaultWatchMinBytes;
    std::string openmetrics_dir;
    bool children = false;
    FocusCommandLine focus;
    SymbolizerOptions symbolizer;
};

}  // namespace

Subcommand add_watch_subcommand(CLI::App& app, TreeReader read_process) {
    auto line = std::make_shared<WatchCommandLine>();
    CLI::App* watch =
        app.add_subcommand("watch",
                           "Sample a live process's segment periodically (read-only) and write one JSON line per "
                           "sample to --out, with a one-line summary per sample on stdout. Stops after --count "
                           "samples or --duration, on Ctrl-C, or when the process exits (keeping what it has, exit "
                           "status 0)");
    watch->add_option("pid", line->pid, "Process to watch")
        ->required()
        ->check(quiet(CLI::Range(int64_t{1}, int64_t{INT_MAX})));
    watch->add_option("--interval", line->interval, "Time between samples: 500ms, 5s, 2m, 1h (default: 5s)")
        ->type_name("DURATION")
        ->check(quiet(CLI::Validator(duration_error, "DURATION")));
    auto* count = watch->add_option("--count", line->count, "Stop after N samples (default: none)")
                      ->check(quiet(CLI::PositiveNumber));
    watch->add_option("--duration", line->duration, "Stop once this much time has passed, e.g. 1h (default: none)")
        ->type_name("DURATION")
        ->check(quiet(CLI::Validator(duration_error, "DURATION")));
    watch->add_option("--out", line->out, "Series file to write, one JSON line per sample")
        ->type_name("FILE")
        ->required();
    watch->add_option("--min-bytes", line->min_bytes,
                      "Leave out of each line the sites holding fewer live bytes (default: " +
                          std::to_string(kDefaultWatchMinBytes) + ")");
    watch
        ->add_option("--openmetrics-dir", line->openmetrics_dir,
                     "Also write each sample's --format prometheus report (top 20 rows) to "
                     "DIR/leakwrap_<pid>.prom, replaced atomically, for node_exporter's textfile "
                     "collector (default: none)")
        ->type_name("DIR")
        ->check(quiet(CLI::ExistingDirectory));
    add_focus_options(*watch, line->focus,
                      "a native frame's function, source file or module path, or a Ruby frame's "
                      "file:line; the series keeps only the sites kept, the totals stay whole");
    watch->add_flag("--children", line->children,
                    "Sample the pid and its live descendants as one process tree, found anew at "
                    "every sample, so that a worker started later joins (default: off)");
    add_libc_lines_flag(*watch, line->symbolizer);

    return {watch, [line, count, read_process] {
                WatchOptions options;
                options.pid = static_cast<pid_t>(line->pid);
                options.interval = *parse_duration(line->interval);
                if (count->count() > 0) options.count = line->count;
                if (!line->duration.empty()) options.duration = parse_duration(line->duration);
                options.min_bytes = line->min_bytes;
                options.focus = line->focus.patterns();
                options.symbolizer = line->symbolizer;
                std::optional<OpenMetricsFile> openmetrics;
                if (!line->openmetrics_dir.empty()) {
                    ReportOptions metrics_options;
                    metrics_options.focus = options.focus;
                    openmetrics.emplace(line->openmetrics_dir, metrics_options, options.symbolizer);
                    options.on_sample = [&openmetrics](const Snapshot& snapshot) { openmetrics->write(snapshot); };
                }
                OutputFile series(line->out);
                const WatchResult result = watch_process(
                    options, [&](pid_t pid) { return read_process(pid, line->children); }, series.stream(), std::cout);
                series.close();
                std::cout << "watch: stopped, " << result.stop_reason << "; " << result.samples << " samples in "
                          << line->out << std::endl;
                return 0;
            }};
}

}  // namespace leakwrap
