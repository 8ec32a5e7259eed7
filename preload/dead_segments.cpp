#include "dead_segments.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "leakwrap/segment_layout.h"
#include "proc_self.h"

namespace leakwrap {
namespace {

using layout::Header;

// The fixed part of the record getdents64 fills (glibc has no declaration of it; readdir would
// allocate). The NUL-terminated name follows at kDirentNameOffset.
struct LinuxDirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
};
constexpr std::size_t kDirentNameOffset = offsetof(LinuxDirent64, d_type) + sizeof(unsigned char);

const char* name_of(const LinuxDirent64* entry) {
    return reinterpret_cast<const char*>(entry) + kDirentNameOffset;
}

// A segment judged dead, by the file that was judged: its name may be taken again by the time
// it is removed.
struct DeadSegment {
    int pid;
    timespec modified;
    dev_t device;
    ino_t inode;
};

// The newest dead segments seen so far, the ones that stay.
constinit DeadSegment g_kept[kMaxKeepDead]{};

// "leakwrap.<pid>" exactly, as the reader takes it: decimal, no sign, no leading zero. 0 if not.
int pid_of_name(const char* name) {
    const std::size_t prefix = std::strlen(layout::kSegmentPrefix);
    if (std::strncmp(name, layout::kSegmentPrefix, prefix) != 0) return 0;
    const char* digit = name + prefix;
    if (*digit < '1' || *digit > '9') return 0;
    long long pid = 0;
    for (; *digit != '\0'; ++digit) {
        if (*digit < '0' || *digit > '9') return 0;
        pid = pid * 10 + (*digit - '0');
        if (pid > INT_MAX) return 0;
    }
    return static_cast<int>(pid);
}

// No process under the header's pid, or another one than wrote it (the pid reused, the machine
// rebooted). A header not yet published may lack the identity: only a missing process counts.
bool owner_is_gone(const Header& header) {
    if (kill(header.pid, 0) != 0 && errno == ESRCH) return true;
    if (header.state != layout::kReady) return false;
    const ProcessIdentity& me = current_process_identity();
    if (header.boot_id[0] != '\0' && me.boot_id[0] != '\0' &&
        std::memcmp(header.boot_id, me.boot_id, sizeof header.boot_id) != 0)
        return true;
    const uint64_t start_time = start_time_ticks_of(header.pid);
    return start_time != 0 && start_time != header.start_time_ticks;
}

// Anyone can plant anything under a segment name: only a regular file of this user, opened
// without following a link or waiting, whose header is a segment of the pid in its name, and
// whose process is gone.
bool dead_segment_of_mine(int directory, const char* name, int pid, DeadSegment* found) {
    const int fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat status {};
    Header header{};
    const bool readable = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
                          status.st_uid == geteuid() &&
                          pread(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
    close(fd);
    if (!readable || std::memcmp(header.magic, layout::kMagic, sizeof header.magic) != 0 ||
        header.pid != pid || !owner_is_gone(header))
        return false;
    *found = DeadSegment{pid, status.st_mtim, status.st_dev, status.st_ino};
    return true;
}

void remove_segment(int directory, const DeadSegment& segment) {
    char name[32];
    std::snprintf(name, sizeof name, "%s%d", layout::kSegmentPrefix, segment.pid);
    struct stat status {};
    if (fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0 &&
        status.st_dev == segment.device && status.st_ino == segment.inode)
        unlinkat(directory, name, 0);
}

bool older(const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

class Trimmer {
public:
    Trimmer(int directory, const Config& config) : directory_(directory), config_(config) {
        clock_gettime(CLOCK_REALTIME, &now_);
    }

    void consider(const char* name, unsigned char type) {
        if (type != DT_REG && type != DT_UNKNOWN) return;
        const int pid = pid_of_name(name);
        DeadSegment segment{};
        if (pid == 0 || !dead_segment_of_mine(directory_, name, pid, &segment)) return;
        if (too_old(segment) || config_.keep_dead == 0) return remove_segment(directory_, segment);
        if (kept_ < config_.keep_dead) {
            g_kept[kept_++] = segment;
            return;
        }
        uint32_t oldest = 0;
        for (uint32_t i = 1; i < kept_; ++i)
            if (older(g_kept[i].modified, g_kept[oldest].modified)) oldest = i;
        if (!older(g_kept[oldest].modified, segment.modified)) return remove_segment(directory_, segment);
        remove_segment(directory_, g_kept[oldest]);
        g_kept[oldest] = segment;
    }

private:
    bool too_old(const DeadSegment& segment) const {
        return config_.keep_dead_days != 0 &&
               now_.tv_sec - segment.modified.tv_sec > int64_t{config_.keep_dead_days} * 86400;
    }

    int directory_;
    const Config& config_;
    timespec now_{};
    uint32_t kept_ = 0;
};

}  // namespace

void trim_dead_segments(const Config& config) {
    const int directory = open(layout::kShmDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) return;
    Trimmer trimmer(directory, config);
    alignas(LinuxDirent64) char entries[8192];
    for (;;) {
        const long got = syscall(SYS_getdents64, directory, entries, sizeof entries);
        if (got <= 0) break;
        for (long at = 0; at < got;) {
            const auto* entry = reinterpret_cast<const LinuxDirent64*>(entries + at);
            at += entry->d_reclen;
            trimmer.consider(name_of(entry), entry->d_type);
        }
    }
    close(directory);
}

}  // namespace leakwrap
