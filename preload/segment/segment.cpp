#include "segment.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "bins.h"
#include "birth_clock.h"
#include "diagnostics.h"
#include "os.h"
#include "private_memory.h"
#include "proc_self.h"
#include "segment_internals.h"
#include "site_counters.h"

namespace leakwrap {

constinit SegmentView g_segment{};

namespace {

using layout::Header;

constexpr uint32_t kModuleCapacity = 2048;
// Ruby source paths of a large app fit many times over; the pool is backed only as it fills.
constexpr uint32_t kStringsCapacity = 16u << 20;
// Stack table bytes per site slot: a native stack of 16 frames is 152 bytes, a Ruby stack of a
// few native and 8 Ruby frames about 100, and a stack serves 1.3 to 2 sites (size classes).
constexpr uint64_t kStackBytesPerSite = 128;

// The current segment's mapping, never unmapped but by its successor in a forked child: it must
// outlive every destructor that may still free memory at exit, and the descriptor stays open
// for fallocate.
constinit os::SharedMapping g_mapping{nullptr, 0, -1};
constinit char g_segment_name[32]{};

}  // namespace

Geometry geometry_for(const Config& config) {
    Geometry g{};
    g.bins_offset = align_up(sizeof(Header), 4096);
    g.site_deltas_offset = g.bins_offset + kBinShards * kShardBinBytes;
    g.sites_offset = align_up(g.site_deltas_offset + kBinShards * kShardDeltaBytes, 4096);
    g.stacks_offset = align_up(g.sites_offset + uint64_t{config.max_sites} * sizeof(layout::SiteRecord), 4096);
    g.stacks_capacity = uint64_t{config.max_sites} * kStackBytesPerSite;
    g.modules_offset = align_up(g.stacks_offset + g.stacks_capacity, 4096);
    g.strings_offset = align_up(g.modules_offset + uint64_t{kModuleCapacity} * sizeof(layout::ModuleRecord), 4096);
    g.size = align_up(g.strings_offset + kStringsCapacity, 4096);
    return g;
}

namespace {

// What an existing /dev/shm/leakwrap.<pid> is, when exclusive creation finds the name taken.
enum class ExistingSegment { kOursStale, kOursReplacedByExec, kForeign };

ExistingSegment classify_existing(const char* name, int pid, uint64_t start_time) {
    char path[64];
    std::snprintf(path, sizeof path, "%s/%s", layout::kShmDirectory, name);
    // Anyone can plant an object under the name of a pid to come, and the program must never
    // wait for it: only a regular file of ours is read, without following a link or waiting.
    Header header{};
    if (!os::read_head_of_own_file(os::kCurrentDirectory, path, &header, sizeof header, nullptr) ||
        std::memcmp(header.magic, layout::kMagic, sizeof header.magic) != 0 || header.pid != pid)
        return ExistingSegment::kForeign;
    return header.start_time_ticks == start_time ? ExistingSegment::kOursReplacedByExec : ExistingSegment::kOursStale;
}

// Opens a new segment exclusively. O_CREAT|O_EXCL never follows a symlink and never opens an
// existing file, so a planted file or link cannot be written through.
bool open_exclusive(const char* name, uint64_t size, os::SharedMapping* mapping, int pid, uint64_t start_time) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int error = os::create_shared_segment(name, size, mapping);
        if (error == 0) return true;
        if (error != EEXIST || attempt > 0) {
            os::remove_shared_segment(name);
            warn("cannot create /dev/shm/%s (%s); this process is not profiled", name, std::strerror(error));
            return false;
        }
        switch (classify_existing(name, pid, start_time)) {
            case ExistingSegment::kForeign:
                warn(
                    "/dev/shm/%s exists and is not a leakwrap segment of this process "
                    "(another owner, a link, or foreign data); leaving it alone, this "
                    "process is not profiled",
                    name);
                return false;
            case ExistingSegment::kOursStale:
                warn("replacing the segment left by an earlier process with the same pid");
                [[fallthrough]];
            case ExistingSegment::kOursReplacedByExec: os::remove_shared_segment(name); break;
        }
    }
    return false;
}

void set_exe_and_command_line(Header* h) {
    const ProcessIdentity& id = current_process_identity();
    intern_string(id.exe_path, std::strlen(id.exe_path), &h->exe_path);
    intern_string(id.command_line, std::strlen(id.command_line), &h->command_line);
}

}  // namespace

void fill_identity(Header* h, int parent_pid) {
    const ProcessIdentity& id = current_process_identity();
    h->pid = id.pid;
    h->parent_pid = parent_pid;
    h->start_time_ticks = id.start_time_ticks;
    std::memcpy(h->boot_id, id.boot_id, sizeof h->boot_id);
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    h->created_unix_ns = uint64_t(now.tv_sec) * 1000000000u + uint64_t(now.tv_nsec);
}

// Maps a new segment for this pid and installs it as the current one.
Header* map_new_segment(const Config& config, const Geometry& g) {
    const ProcessIdentity& id = refresh_process_identity();
    char name[sizeof g_segment_name];
    std::snprintf(name, sizeof name, "%s%d", layout::kSegmentPrefix, id.pid);
    os::SharedMapping mapping{};
    if (!open_exclusive(name, g.size, &mapping, id.pid, id.start_time_ticks)) return nullptr;

    // The previous segment (a forked child's view of its parent's) is unmapped and closed once
    // the new one is installed.
    const os::SharedMapping previous = g_mapping;
    g_mapping = mapping;
    const int segment_fd = mapping.fd;
    std::memcpy(g_segment_name, name, sizeof name);
    start_reservations(g, segment_fd);

    std::byte* base = mapping.base;
    g_segment = SegmentView{base,
                            reinterpret_cast<Header*>(base),
                            reinterpret_cast<layout::BinCounters*>(base + g.bins_offset),
                            reinterpret_cast<layout::SiteDelta*>(base + g.site_deltas_offset),
                            base + g.stacks_offset,
                            g.stacks_capacity,
                            config.max_sites,
                            config.depth,
                            config.ruby_depth};
    // The header, the shared shard and the overflow sites are written at once; later slots and
    // the other shards are backed on claim.
    const bool backed =
        os::back_segment_bytes(segment_fd, 0, g.bins_offset) &&
        back_shard_range(kSharedBinShard, kSharedBinShard + 1) &&
        reserve_segment_bytes(g.sites_offset, uint64_t{layout::kOverflowSites} * sizeof(layout::SiteRecord));
    os::release_shared_segment(previous);
    if (!backed) {
        warn("no space in /dev/shm for a leakwrap segment; this process is not profiled");
        os::remove_shared_segment(name);
        return nullptr;
    }
    return reinterpret_cast<Header*>(base);
}

void publish(Header* h) { std::atomic_ref<uint32_t>(h->state).store(layout::kReady, std::memory_order_release); }

bool create_segment(const Config& config, uint32_t header_flags) {
    Geometry g = geometry_for(config);
    Header* h = map_new_segment(config, g);
    if (h == nullptr) {
        g_segment = SegmentView{};
        return false;
    }
    std::memcpy(h->magic, layout::kMagic, sizeof h->magic);
    h->layout_version = layout::kLayoutVersion;
    h->header_size = sizeof(Header);
    h->segment_size = g.size;
    fill_identity(h, getppid());
    h->max_depth = config.depth;
    h->max_ruby_depth = config.ruby_depth;
    h->site_capacity = config.max_sites;
    h->site_record_size = sizeof(layout::SiteRecord);
    h->stacks_capacity = g.stacks_capacity;
    h->stacks_offset = g.stacks_offset;
    h->module_capacity = kModuleCapacity;
    h->module_record_size = sizeof(layout::ModuleRecord);
    h->strings_capacity = kStringsCapacity;
    h->sites_offset = g.sites_offset;
    h->modules_offset = g.modules_offset;
    h->strings_offset = g.strings_offset;
    h->bins_offset = g.bins_offset;
    h->bin_shards = kBinShards;
    h->site_delta_slots = kSiteDeltaSlots;
    h->site_deltas_offset = g.site_deltas_offset;
    h->sample_interval = config.sample_interval;
    h->flags = header_flags;
    h->allocator_stats_offset = sizeof(Header);  // in the header's page, backed with it
    start_birth_clock(h);
    set_exe_and_command_line(h);
    // The overflow sites, one per size class: empty stack, always visible.
    for (uint32_t size_class = 0; size_class < layout::kOverflowSites; ++size_class) {
        layout::SiteRecord* overflow = site_record(size_class);
        overflow->size_class = static_cast<uint8_t>(size_class);
        overflow->stack = layout::kNoStack;
        overflow->state = layout::kReady;
    }
    h->sites_claimed = layout::kOverflowSites;
    publish_private_bytes();  // what tables made before this segment hold
    publish(h);
    return true;
}

void unlink_segment() {
    if (g_segment.base == nullptr) return;
    // No allocation: fine inside _exit() or a signal handler.
    os::remove_shared_segment(g_segment_name);
}

}  // namespace leakwrap
