// Reading a segment file that another process may still be writing, without trusting the file
// and without ever stopping or slowing that process.
#pragma once

#include "segment_snapshot.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

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

// Opens the file without following links, refuses it unless it is a regular file of this user
// that nobody else may write, waits while a writer is still initializing it (up to
// ready_timeout), copies what the writer has published and parses the copy. Throws
// SegmentFileError or SegmentError.
Snapshot read_segment_file(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace leakwrap
