#include "segment_directory.h"

#include "process_identity.h"

#include "segment_file.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <system_error>

namespace leakwrap {

std::optional<pid_t> pid_from_segment_name(std::string_view file_name) {
    const std::string_view prefix = layout::kSegmentPrefix;
    if (!file_name.starts_with(prefix)) return std::nullopt;
    const std::string_view digits = file_name.substr(prefix.size());
    if (digits.empty() || digits.front() == '0') return std::nullopt;
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return pid;
}

std::filesystem::path segment_path(pid_t pid, const std::filesystem::path& directory) {
    return directory / (std::string(layout::kSegmentPrefix) + std::to_string(pid));
}

std::vector<SegmentEntry> find_segments(const std::filesystem::path& directory) {
    std::vector<SegmentEntry> entries;
    std::error_code error;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
        if (const auto pid = pid_from_segment_name(it->path().filename().string()))
            entries.push_back({*pid, it->path()});
    }
    if (error) throw std::filesystem::filesystem_error("cannot list segments", directory, error);
    std::sort(entries.begin(), entries.end(),
              [](const SegmentEntry& a, const SegmentEntry& b) { return a.pid < b.pid; });
    return entries;
}

Snapshot read_segment(const SegmentEntry& entry) {
    for (uint32_t read = 1;; ++read) {
        auto snapshot = read_segment_file(entry.path);
        if (snapshot.pid != entry.pid)
            throw SegmentError(entry.path.string() + " claims to belong to pid " + std::to_string(snapshot.pid));
        snapshot.reads = read;
        // A copy of a live segment can catch a site in the middle of an update; a segment that
        // shows more frees than allocations read after read is not in the middle of anything.
        if (snapshot.impossible_sites == 0 || read == kReadsOfAnInconsistentSegment ||
            owner_state(snapshot) != OwnerState::alive)
            return snapshot;
    }
}

}  // namespace leakwrap
