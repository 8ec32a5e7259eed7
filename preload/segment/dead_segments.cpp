#include "dead_segments.h"

#include <dirent.h>
#include <time.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "leakwrap/segment_layout.h"
#include "os.h"
#include "proc_self.h"

namespace leakwrap {
namespace {

using layout::Header;

// A segment judged dead, by the file that was judged: its name may be taken again by the time
// it is removed.
struct DeadSegment {
    int pid;
    os::FileIdentity file;
    bool replaced_by_exec;  // written by an image that exec replaced: nothing to report
};

// The dead segments a pass has seen (it opens at most most_segments_opened() files).
constinit DeadSegment g_seen[kMaxKeepDead + kSegmentsOpenedBeyondKept]{};

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

// Anyone can plant anything under a segment name: only a regular file of this user, opened
// without following a link or waiting, whose header is a segment of the pid in its name, and
// whose process is gone.
bool dead_segment_of_mine(int directory, const char* name, int pid, DeadSegment* found) {
    Header header{};
    os::FileIdentity file{};
    if (!os::read_head_of_own_file(directory, name, &header, sizeof header, &file) ||
        std::memcmp(header.magic, layout::kMagic, sizeof header.magic) != 0 || header.pid != pid ||
        !writer_is_gone(header))
        return false;
    *found = DeadSegment{pid, file, header.process_state == layout::kProcessReplacedByExec};
    return true;
}

void remove_segment(int directory, const DeadSegment& segment) {
    char name[32];
    std::snprintf(name, sizeof name, "%s%d", layout::kSegmentPrefix, segment.pid);
    os::remove_if_same_file(directory, name, segment.file);
}

bool older(const timespec& a, const timespec& b) {
    return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

// Removes the dead segments too old as it meets them; the count rule waits for the end of the
// pass, since only a pass that saw every dead segment knows which are the newest.
class Trimmer {
public:
    explicit Trimmer(const Config& config) : config_(config) { clock_gettime(CLOCK_REALTIME, &now_); }

    // An entry of /dev/shm, open as `directory`; false once the pass has opened all it may.
    bool consider(int directory, const char* name, unsigned char type) {
        if (type != DT_REG && type != DT_UNKNOWN) return true;
        const int pid = pid_of_name(name);
        if (pid == 0) return true;
        if (opened_ == most_segments_opened(config_)) return false;
        ++opened_;
        DeadSegment segment{};
        if (!dead_segment_of_mine(directory, name, pid, &segment)) return true;
        if (segment.replaced_by_exec || too_old(segment))
            remove_segment(directory, segment);
        else
            g_seen[seen_++] = segment;
        return true;
    }

    // After a pass that saw the whole directory, only the newest config.keep_dead stay.
    void finish(int directory, bool whole) {
        if (!whole) return;
        while (seen_ > config_.keep_dead) {
            uint32_t oldest = 0;
            for (uint32_t i = 1; i < seen_; ++i)
                if (older(g_seen[i].file.modified, g_seen[oldest].file.modified)) oldest = i;
            remove_segment(directory, g_seen[oldest]);
            g_seen[oldest] = g_seen[--seen_];
        }
    }

private:
    bool too_old(const DeadSegment& segment) const {
        return config_.keep_dead_days != 0 &&
               now_.tv_sec - segment.file.modified.tv_sec > int64_t{config_.keep_dead_days} * 86400;
    }

    const Config& config_;
    timespec now_{};
    uint32_t opened_ = 0;
    uint32_t seen_ = 0;
};

}  // namespace

void trim_dead_segments(const Config& config) {
    const int directory = os::open_directory(layout::kShmDirectory);
    if (directory < 0) return;
    Trimmer trimmer(config);
    const bool whole = os::for_each_directory_entry(
        directory, kMaxEntriesRead,
        [](void* trimmer_pointer, int open_directory, const char* name, unsigned char type) {
            return static_cast<Trimmer*>(trimmer_pointer)->consider(open_directory, name, type);
        },
        &trimmer);
    trimmer.finish(directory, whole);
    os::close_file(directory);
}

}  // namespace leakwrap
