// `watch --openmetrics-dir DIR`: the metrics of every sample, as the file DIR/leakwrap_<pid>.prom
// in the Prometheus text format, which node_exporter's textfile collector reads (it does not read
// OpenMetrics).
#pragma once

#include "report_options.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

#include <sys/types.h>

#include <filesystem>

namespace leakwrap {

class OpenMetricsFile {
public:
    OpenMetricsFile(std::filesystem::path directory, ReportOptions options, SymbolizerOptions symbolizer_options);
    ~OpenMetricsFile();

    // Replaces the file atomically (a new temporary file in DIR, then rename), so that a
    // collector reads the previous sample or this one, never half of one. Throws when DIR is not
    // writable. A directory that holds the file's name (another user may plant one in a shared
    // DIR) keeps that sample's file from being written, with one warning on stderr for the run.
    void write(const Snapshot& snapshot);

private:
    std::filesystem::path directory_;
    ReportOptions options_;
    mode_t mode_;  // of each new file
    ProcessSymbolizer symbolizer_;
    bool warned_of_directory_ = false;
};

}  // namespace leakwrap
