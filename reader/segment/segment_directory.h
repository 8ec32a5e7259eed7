// Where segments live and how their file names map to pids.
#pragma once

#include "segment_snapshot.h"

#include <leakwrap/segment_layout.h>

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace leakwrap {

struct SegmentEntry {
    pid_t pid;
    std::filesystem::path path;
};

// The pid of a name that is exactly "leakwrap.<pid>" (decimal, no sign, no leading zero).
std::optional<pid_t> pid_from_segment_name(std::string_view file_name);

std::filesystem::path segment_path(pid_t pid, const std::filesystem::path& directory = layout::kShmDirectory);

// Every "leakwrap.<pid>" entry of the directory, whatever its file type, ordered by pid.
std::vector<SegmentEntry> find_segments(const std::filesystem::path& directory = layout::kShmDirectory);

// read_segment_file, plus a check that the segment belongs to the pid its name says. A live
// segment whose copy shows a site with more frees than allocations is read again, up to
// kReadsOfAnInconsistentSegment times in all (Snapshot::reads says how many it took).
inline constexpr uint32_t kReadsOfAnInconsistentSegment = 3;
Snapshot read_segment(const SegmentEntry& entry);

}  // namespace leakwrap
