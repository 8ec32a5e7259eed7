#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace leakwrap {
namespace {

constexpr int kWriteFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;

// A link in a sticky directory that others may write to, owned by neither this user nor the
// directory's owner: who planted it decides where it points.
bool planted_link(const std::string& path, const struct stat& link) {
    std::filesystem::path directory = std::filesystem::path(path).parent_path();
    if (directory.empty()) directory = ".";
    struct stat status {};
    if (stat(directory.c_str(), &status) != 0) return false;
    const bool shared_sticky = (status.st_mode & S_ISVTX) != 0 && (status.st_mode & S_IWOTH) != 0;
    return shared_sticky && link.st_uid != geteuid() && link.st_uid != status.st_uid;
}

int open_for_output(const std::string& path) {
    const auto fail = [&](const std::string& why) { return std::runtime_error("cannot write " + path + ": " + why); };
    for (int attempt = 0; attempt < 3; ++attempt) {
        struct stat link {};
        if (lstat(path.c_str(), &link) != 0) {
            if (errno != ENOENT) throw fail(std::strerror(errno));
            // No such name: create it, and follow nothing planted under it meanwhile.
            const int fd = open(path.c_str(), kWriteFlags | O_EXCL | O_NOFOLLOW, 0666);
            if (fd >= 0 || errno != EEXIST) return fd >= 0 ? fd : throw fail(std::strerror(errno));
            continue;  // it appeared meanwhile: look again
        }
        if (S_ISLNK(link.st_mode)) {
            if (planted_link(path, link))
                throw fail(
                    "a link of another user's in a directory everyone may write to (sticky); "
                    "not followed");
            const int fd = open(path.c_str(), kWriteFlags, 0666);
            return fd >= 0 ? fd : throw fail(std::strerror(errno));
        }
        const int fd = open(path.c_str(), kWriteFlags | O_NOFOLLOW, 0666);
        if (fd >= 0) return fd;
        if (errno != ELOOP) throw fail(std::strerror(errno));  // ELOOP: it became a link meanwhile
    }
    throw fail("its name kept changing while it was opened");
}

}  // namespace

OutputFile::OutputFile(const std::string& path)
    : path_(path), buffer_(open_for_output(path), std::ios::out | std::ios::binary), stream_(&buffer_) {}

void OutputFile::close() {
    stream_.flush();
    const bool written = static_cast<bool>(stream_);
    if (buffer_.close() == nullptr || !written) throw std::runtime_error("cannot write " + path_);
}

}  // namespace leakwrap
