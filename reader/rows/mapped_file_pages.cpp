#include "mapped_file_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace leakwrap {
namespace {

struct Mapping {
    uintptr_t start = 0;
    uintptr_t end = 0;
};

// Every page of the mapping that is in memory or swap is the file's (pagemap.rst: bit 63
// present, 62 swapped, 61 file page or shared anonymous).
bool holds_only_file_pages(int page_map, const Mapping& mapping) {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    constexpr uint64_t kPresent = uint64_t{1} << 63, kSwapped = uint64_t{1} << 62, kFile = uint64_t{1} << 61;
    uint64_t entries[512];
    for (uintptr_t first = mapping.start / page, left = (mapping.end - mapping.start) / page; left > 0;) {
        const uintptr_t count = std::min<uintptr_t>(left, 512);
        const auto bytes = static_cast<ssize_t>(count * sizeof(uint64_t));
        if (::pread(page_map, entries, static_cast<std::size_t>(bytes), static_cast<off_t>(first * sizeof(uint64_t))) !=
            bytes)
            return false;
        for (uintptr_t i = 0; i < count; ++i)
            if ((entries[i] & kSwapped) != 0 || ((entries[i] & kPresent) != 0 && (entries[i] & kFile) == 0))
                return false;
        first += count;
        left -= count;
    }
    return true;
}

}  // namespace

void drop_whole_file_mappings(const std::vector<std::string>& paths) {
    // By device and inode: the maps name a file by its canonical path, libdw by the one it was
    // given (/lib/... for /usr/lib/..., say).
    struct File {
        dev_t device;
        ino_t inode;
        uintptr_t size;
    };
    std::vector<File> files;
    for (const std::string& path : paths) {
        struct stat file {};
        if (::stat(path.c_str(), &file) == 0 && S_ISREG(file.st_mode))
            files.push_back({file.st_dev, file.st_ino, static_cast<uintptr_t>(file.st_size)});
    }
    std::vector<Mapping> whole_files;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; files.size() > 0 && std::getline(maps, line);) {
        std::istringstream fields(line);
        std::string range, permissions, offset, device;
        ino_t inode = 0;
        fields >> range >> permissions >> offset >> device >> inode;
        unsigned major = 0, minor = 0;
        if (offset.find_first_not_of('0') != std::string::npos ||
            std::sscanf(device.c_str(), "%x:%x", &major, &minor) != 2)
            continue;
        Mapping mapping;
        if (std::sscanf(range.c_str(), "%" SCNxPTR "-%" SCNxPTR, &mapping.start, &mapping.end) != 2) continue;
        const auto file = std::find_if(files.begin(), files.end(), [&](const File& candidate) {
            return candidate.inode == inode && major(candidate.device) == major && minor(candidate.device) == minor;
        });
        if (file != files.end() && mapping.end - mapping.start >= file->size) whole_files.push_back(mapping);
    }
    if (whole_files.empty()) return;
    const int page_map = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (page_map < 0) return;
    for (const Mapping& mapping : whole_files)
        if (holds_only_file_pages(page_map, mapping))
            ::madvise(reinterpret_cast<void*>(mapping.start), mapping.end - mapping.start, MADV_DONTNEED);
    ::close(page_map);
}

}  // namespace leakwrap
