// --clean: remove the segments nobody will read any more.
#pragma once

#include <leakwrap/segment_layout.h>

#include <cstddef>
#include <filesystem>
#include <ostream>

namespace leakwrap {

struct CleanResult {
    std::size_t removed = 0;
    std::size_t kept = 0;
    std::size_t failed = 0;  // removal attempted and refused by the system
};

// Removes segments whose owner is dead, stale or exited, and unreadable ones whose pid (from the
// file name) is not running. Never touches a live owner's segment, another user's file, or
// anything that is not a regular file. Prints one line per removal and a summary.
CleanResult clean_segments(std::ostream& out, const std::filesystem::path& directory = layout::kShmDirectory);

}  // namespace leakwrap
