#include "report_openmetrics_file.h"

#include "process_identity.h"
#include "report_openmetrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace leakwrap {
namespace {

// mkstemp makes its file 0600, but the collector usually runs as another user: the file gets the
// mode open(O_CREAT) would give it, 0666 less the umask.
mode_t mode_for_new_files() {
    const mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

bool write_all(int fd, const std::string& text) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
        if (wrote < 0 && errno != EINTR) return false;
        if (wrote > 0) done += static_cast<std::size_t>(wrote);
    }
    return true;
}

}  // namespace

OpenMetricsFile::OpenMetricsFile(std::filesystem::path directory, ReportOptions options,
                                 SymbolizerOptions symbolizer_options)
    : directory_(std::move(directory)),
      options_(options),
      mode_(mode_for_new_files()),
      symbolizer_(symbolizer_options) {}

OpenMetricsFile::~OpenMetricsFile() = default;

void OpenMetricsFile::write(const Snapshot& snapshot) {
    std::ostringstream report;
    write_metrics(report, {{snapshot, owner_state(snapshot), symbolizer_.of(snapshot), options_}},
                  MetricsDialect::prometheus);
    const std::string text = report.str();

    const std::string name = "leakwrap_" + std::to_string(snapshot.pid) + ".prom";
    const std::filesystem::path target = directory_ / name;
    // Collectors read *.prom only, so the temporary is never read half-written. DIR may be
    // writable by others (a shared textfile directory): a predictable name could be a planted
    // link to write through, so mkstemp picks the name and creates the file with O_EXCL.
    std::string temporary = (directory_ / ("." + name + ".XXXXXX")).string();
    const int fd = mkstemp(temporary.data());
    if (fd < 0)
        throw std::runtime_error("cannot create a temporary file in " + directory_.string() + ": " +
                                 std::strerror(errno));
    bool written = fchmod(fd, mode_) == 0 && write_all(fd, text);
    int error = errno;
    if (::close(fd) != 0 && written) {
        written = false;
        error = errno;
    }
    if (!written) {
        ::unlink(temporary.c_str());
        throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(error));
    }
    // rename replaces whatever holds the name, a planted link included, never writing through it.
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
        error = errno;
        ::unlink(temporary.c_str());
        if (error == EISDIR || error == ENOTEMPTY || error == EEXIST) {
            if (!warned_of_directory_)
                std::cerr << "leakwrap-report: warning: " << target.string()
                          << " is a directory; the samples are not written there while it is\n";
            warned_of_directory_ = true;
            return;
        }
        throw std::runtime_error("cannot rename " + temporary + " to " + target.string() + ": " + std::strerror(error));
    }
}

}  // namespace leakwrap
