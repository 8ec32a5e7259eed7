// A fresh directory under $TMPDIR (or /tmp), removed with everything in it when the test ends:
// the one every suite uses.
#pragma once

#include <filesystem>

namespace leakwrap {

class TemporaryDirectory {
public:
    TemporaryDirectory();
    ~TemporaryDirectory();
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace leakwrap
