// `watch --openmetrics-dir DIR`: the metrics of every sample, as the file DIR/leakwrap_<pid>.prom
// in the Prometheus text format, which node_exporter's textfile collector reads (it does not read
// OpenMetrics).
#pragma once

#include "report_options.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>

namespace leakwrap {

class OpenMetricsFile {
public:
    OpenMetricsFile(std::filesystem::path directory, ReportOptions options);
    ~OpenMetricsFile();

    // Replaces the file atomically (a new temporary file in DIR, then rename), so that a
    // collector reads the previous sample or this one, never half of one. Throws when DIR is not
    // writable.
    void write(const Snapshot& snapshot);

private:
    std::filesystem::path directory_;
    ReportOptions options_;
    mode_t mode_;  // of each new file
    // Kept across samples, since it caches what it resolved; rebuilt when the module list grows
    // (modules are only ever appended, so their count tells).
    std::unique_ptr<Symbolizer> symbolizer_;
    std::size_t modules_ = 0;
};

}  // namespace leakwrap
