#include "segment_cleaning.h"

#include "printable_text.h"
#include "process_identity.h"
#include "segment_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace leakwrap {
namespace {

bool is_own_regular_file(const std::filesystem::path& path) {
    struct stat status {};
    return ::lstat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode) && status.st_uid == ::geteuid();
}

// Why the segment may go, or nullopt if it must stay.
std::optional<std::string> removal_reason(const SegmentEntry& entry) {
    try {
        const auto state = owner_state(read_segment(entry));
        if (state == OwnerState::alive) return std::nullopt;
        return std::string(owner_state_name(state));
    } catch (const std::exception& error) {
        // Without a readable header only the name's pid is left to go by; a running process
        // under it may be the writer, so its file stays.
        if (process_exists(entry.pid)) return std::nullopt;
        return std::string("unreadable, no process ") + std::to_string(entry.pid) + ": " + error.what();
    }
}

}  // namespace

CleanResult clean_segments(std::ostream& out, const std::filesystem::path& directory) {
    CleanResult result;
    for (const auto& entry : find_segments(directory)) {
        if (!is_own_regular_file(entry.path)) {
            ++result.kept;
            continue;
        }
        const auto reason = removal_reason(entry);
        if (!reason) {
            ++result.kept;
            continue;
        }
        if (::unlink(entry.path.c_str()) != 0) {
            // Gone since it was listed (its process exited cleanly, another --clean ran): what
            // was wanted, not a failure.
            if (errno == ENOENT) continue;
            out << "could not remove " << entry.path.string() << ": " << std::strerror(errno) << '\n';
            ++result.failed;
            continue;
        }
        out << "removed " << entry.path.string() << " (" << printable(*reason) << ")\n";
        ++result.removed;
    }
    out << "removed " << result.removed << " segment(s), kept " << result.kept;
    if (result.failed > 0) out << ", " << result.failed << " could not be removed";
    out << '\n';
    return result;
}

}  // namespace leakwrap
