#include "segment.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "bins.h"
#include "diagnostics.h"
#include "proc_self.h"
#include "segment_internals.h"
#include "site_counters.h"

namespace leakwrap {

constinit SegmentView g_segment{};

namespace {

namespace bip = boost::interprocess;
using layout::Header;

constexpr uint32_t kModuleCapacity = 2048;
// Ruby source paths of a large app fit many times over; the pool is backed only as it fills.
constexpr uint32_t kStringsCapacity = 16u << 20;
// Stack table bytes per site slot: a native stack of 16 frames is 152 bytes, a Ruby stack of a
// few native and 8 Ruby frames about 100, and a stack serves 1.3 to 2 sites (size classes).
constexpr uint64_t kStackBytesPerSite = 128;

// Boost objects live in static storage that is never destroyed: the mapping must outlive every
// destructor that may still free memory at exit, and the descriptor is needed for fallocate.
alignas(bip::shared_memory_object) constinit unsigned char g_shm_storage[sizeof(bip::shared_memory_object)]{};
alignas(bip::mapped_region) constinit unsigned char g_region_storage[sizeof(bip::mapped_region)]{};
constinit bool g_boost_objects_live = false;
constinit char g_segment_name[32]{};

bip::shared_memory_object& stored_shm() {
    return *std::launder(reinterpret_cast<bip::shared_memory_object*>(g_shm_storage));
}
bip::mapped_region& stored_region() {
    return *std::launder(reinterpret_cast<bip::mapped_region*>(g_region_storage));
}

}  // namespace

Geometry geometry_for(const Config& config) {
    Geometry g{};
    g.bins_offset = align_up(sizeof(Header), 4096);
    g.site_deltas_offset =
        g.bins_offset + uint64_t{layout::kSizeClassCount} * kBinShards * sizeof(layout::BinCounters);
    g.sites_offset = align_up(
        g.site_deltas_offset + uint64_t{kBinShards} * kSiteDeltaSlots * sizeof(layout::SiteDelta), 4096);
    g.stacks_offset =
        align_up(g.sites_offset + uint64_t{config.max_sites} * sizeof(layout::SiteRecord), 4096);
    g.stacks_capacity = uint64_t{config.max_sites} * kStackBytesPerSite;
    g.modules_offset = align_up(g.stacks_offset + g.stacks_capacity, 4096);
    g.strings_offset =
        align_up(g.modules_offset + uint64_t{kModuleCapacity} * sizeof(layout::ModuleRecord), 4096);
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
    // wait for it: O_NONBLOCK keeps open() of a FIFO from waiting forever for a writer,
    // O_NOFOLLOW refuses a link, and nothing is read before fstat shows a regular file we own.
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ExistingSegment::kForeign;
    struct stat st {};
    Header header{};
    bool readable = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                    pread(fd, &header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
    close(fd);
    if (!readable || std::memcmp(header.magic, layout::kMagic, sizeof header.magic) != 0 ||
        header.pid != pid)
        return ExistingSegment::kForeign;
    return header.start_time_ticks == start_time ? ExistingSegment::kOursReplacedByExec
                                                 : ExistingSegment::kOursStale;
}

// Opens a new segment exclusively. O_CREAT|O_EXCL never follows a symlink and never opens an
// existing file, so a planted file or link cannot be written through.
bool open_exclusive(const char* name, uint64_t size, bip::shared_memory_object& shm,
                    bip::mapped_region& region, int pid, uint64_t start_time) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            bip::shared_memory_object created(bip::create_only, name, bip::read_write,
                                              bip::permissions(0600));
            created.truncate(static_cast<bip::offset_t>(size));
            bip::mapped_region mapped(created, bip::read_write, 0, size);
            shm.swap(created);
            region.swap(mapped);
            return true;
        } catch (const bip::interprocess_exception& error) {
            if (error.get_error_code() != bip::already_exists_error || attempt > 0) {
                bip::shared_memory_object::remove(name);
                warn("cannot create /dev/shm/%s (%s); this process is not profiled", name,
                     error.what());
                return false;
            }
            switch (classify_existing(name, pid, start_time)) {
                case ExistingSegment::kForeign:
                    warn("/dev/shm/%s exists and is not a leakwrap segment of this process "
                         "(another owner, a link, or foreign data); leaving it alone, this "
                         "process is not profiled",
                         name);
                    return false;
                case ExistingSegment::kOursStale:
                    warn("replacing the segment left by an earlier process with the same pid");
                    [[fallthrough]];
                case ExistingSegment::kOursReplacedByExec:
                    bip::shared_memory_object::remove(name);
                    break;
            }
        } catch (...) {
            warn("cannot create /dev/shm/%s; this process is not profiled", name);
            return false;
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
    bip::shared_memory_object shm;
    bip::mapped_region region;
    if (!open_exclusive(name, g.size, shm, region, id.pid, id.start_time_ticks)) return nullptr;

    if (!g_boost_objects_live) {
        new (g_shm_storage) bip::shared_memory_object();
        new (g_region_storage) bip::mapped_region();
        g_boost_objects_live = true;
    }
    // After the swaps the locals hold the previous segment (a forked child's view of its
    // parent's) and unmap/close it when they go out of scope.
    stored_shm().swap(shm);
    stored_region().swap(region);
    int segment_fd = static_cast<int>(stored_shm().get_mapping_handle().handle);
    std::memcpy(g_segment_name, name, sizeof name);
    start_reservations(g, segment_fd);

    auto* base = static_cast<std::byte*>(stored_region().get_address());
    g_segment = SegmentView{base, reinterpret_cast<Header*>(base),
                            reinterpret_cast<layout::BinCounters*>(base + g.bins_offset),
                            reinterpret_cast<layout::SiteDelta*>(base + g.site_deltas_offset),
                            base + g.stacks_offset, g.stacks_capacity, config.max_sites,
                            config.depth, config.ruby_depth};
    // The header, the bins, the site deltas and the overflow sites are written at once; later
    // slots are backed on claim.
    if (posix_fallocate(segment_fd, 0, static_cast<off_t>(g.sites_offset)) != 0 ||
        !reserve_segment_bytes(g.sites_offset, uint64_t{layout::kOverflowSites} * sizeof(layout::SiteRecord))) {
        warn("no space in /dev/shm for a leakwrap segment; this process is not profiled");
        bip::shared_memory_object::remove(name);
        return nullptr;
    }
    return reinterpret_cast<Header*>(base);
}

void publish(Header* h) { std::atomic_ref<uint32_t>(h->state).store(layout::kReady, std::memory_order_release); }

bool create_segment(const Config& config) {
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
    set_exe_and_command_line(h);
    // The overflow sites, one per size class: empty stack, always visible.
    for (uint32_t size_class = 0; size_class < layout::kOverflowSites; ++size_class) {
        layout::SiteRecord* overflow = site_record(size_class);
        overflow->size_class = size_class;
        overflow->stack = layout::kNoStack;
        overflow->state = layout::kReady;
    }
    h->sites_claimed = layout::kOverflowSites;
    publish(h);
    return true;
}

void unlink_segment() {
    if (g_segment.base == nullptr) return;
    // shm_unlink on a stack-built name: no allocation, fine inside _exit() or a signal handler.
    char name[sizeof g_segment_name + 1] = "/";
    std::memcpy(name + 1, g_segment_name, sizeof g_segment_name);
    shm_unlink(name);
}

}  // namespace leakwrap
