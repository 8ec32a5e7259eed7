// --list: one line per segment of a directory.
#pragma once

#include <leakwrap/segment_layout.h>

#include <filesystem>
#include <ostream>

namespace leakwrap {

// Unreadable segments are listed too, with the reason in place of the executable.
void list_segments(std::ostream& out, const std::filesystem::path& directory = layout::kShmDirectory);

}  // namespace leakwrap
