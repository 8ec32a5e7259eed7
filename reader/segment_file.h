// Reading a segment file that another process may still be writing, without trusting the file
// and without ever stopping or slowing that process.
#pragma once

#include "segment_snapshot.h"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace leakwrap {

// The file could not be opened or is not one this user should trust.
class SegmentFileError : public std::runtime_error {
public:
    SegmentFileError(const std::string& message, int error_number)
        : std::runtime_error(message), error_number_(error_number) {}
    // errno of the failing call, 0 for a refusal on policy grounds.
    int error_number() const noexcept { return error_number_; }

private:
    int error_number_;
};

struct ReadOptions {
    // How long to wait for a writer that is still initializing the segment.
    std::chrono::milliseconds ready_timeout{1000};
};

// A private copy of the file's bytes, taken after the header reads as ready (or the timeout).
std::vector<std::byte> copy_segment_file(const std::filesystem::path& path,
                                         const ReadOptions& options = {});

// copy_segment_file + parse_segment; throws SegmentFileError or SegmentError.
Snapshot read_segment_file(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace leakwrap
