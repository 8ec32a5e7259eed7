#include "report_openmetrics_file.h"

#include "report_openmetrics.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace leakwrap {

OpenMetricsFile::OpenMetricsFile(std::filesystem::path directory, ReportOptions options)
    : directory_(std::move(directory)), options_(options) {}

OpenMetricsFile::~OpenMetricsFile() = default;

void OpenMetricsFile::write(const Snapshot& snapshot) {
    if (!symbolizer_ || snapshot.modules.size() != modules_) {
        symbolizer_ = std::make_unique<Symbolizer>(snapshot.modules);
        modules_ = snapshot.modules.size();
    }
    const std::string name = "leakwrap_" + std::to_string(snapshot.pid) + ".prom";
    const std::filesystem::path target = directory_ / name;
    // Collectors read *.prom only, so the temporary name is never read half-written.
    const std::filesystem::path temporary = directory_ / ("." + name + ".tmp");
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out)
            throw std::runtime_error("cannot write " + temporary.string() + ": " +
                                     std::strerror(errno));
        write_openmetrics_report(out, {snapshot, owner_state(snapshot), *symbolizer_, options_});
        out.close();
        if (!out) throw std::runtime_error("cannot write " + temporary.string());
    }
    std::error_code error;
    std::filesystem::rename(temporary, target, error);
    if (error)
        throw std::runtime_error("cannot rename " + temporary.string() + " to " +
                                 target.string() + ": " + error.message());
}

}  // namespace leakwrap
