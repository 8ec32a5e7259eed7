#include "segment.h"

#include <fcntl.h>
#include <sys/mman.h>
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
#include "debug_check.h"
#include "diagnostics.h"
#include "guard.h"
#include "proc_self.h"
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
// tmpfs pages are reserved in chunks of this many bytes as the tables fill.
constexpr uint64_t kReserveChunk = 64 * 1024;

// Boost objects live in static storage that is never destroyed: the mapping must outlive every
// destructor that may still free memory at exit, and the descriptor is needed for fallocate.
alignas(bip::shared_memory_object) constinit unsigned char g_shm_storage[sizeof(bip::shared_memory_object)]{};
alignas(bip::mapped_region) constinit unsigned char g_region_storage[sizeof(bip::mapped_region)]{};
constinit bool g_boost_objects_live = false;
constinit int g_segment_fd = -1;
constinit char g_segment_name[32]{};
// Per table, everything below the mark is backed: sites (and what precedes them), stacks,
// modules, strings.
enum Table { kSitesTable, kStacksTable, kModulesTable, kStringsTable, kTables };
constinit std::atomic<uint64_t> g_reserved_until[kTables]{};

bip::shared_memory_object& stored_shm() {
    return *std::launder(reinterpret_cast<bip::shared_memory_object*>(g_shm_storage));
}
bip::mapped_region& stored_region() {
    return *std::launder(reinterpret_cast<bip::mapped_region*>(g_region_storage));
}

// Snapshot taken in the fork "prepare" handler: an anonymous private mapping as large as the
// segment holding the in-use ranges at their own offsets (untouched pages cost nothing).
constinit std::byte* g_fork_snapshot = nullptr;
constinit uint64_t g_fork_snapshot_size = 0;

uint64_t align_up(uint64_t value, uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

struct Geometry {
    uint64_t bins_offset, site_deltas_offset, sites_offset, stacks_offset, stacks_capacity,
        modules_offset, strings_offset, size;
};

constinit Geometry g_geometry{};

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

void set_exe_and_command_line(Header* h) {
    const ProcessIdentity& id = current_process_identity();
    intern_string(id.exe_path, std::strlen(id.exe_path), &h->exe_path);
    intern_string(id.command_line, std::strlen(id.command_line), &h->command_line);
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
    g_segment_fd = static_cast<int>(stored_shm().get_mapping_handle().handle);
    std::memcpy(g_segment_name, name, sizeof name);
    g_geometry = g;
    g_reserved_until[kSitesTable].store(g.sites_offset, std::memory_order_relaxed);
    g_reserved_until[kStacksTable].store(g.stacks_offset, std::memory_order_relaxed);
    g_reserved_until[kModulesTable].store(g.modules_offset, std::memory_order_relaxed);
    g_reserved_until[kStringsTable].store(g.strings_offset, std::memory_order_relaxed);

    auto* base = static_cast<std::byte*>(stored_region().get_address());
    g_segment = SegmentView{base, reinterpret_cast<Header*>(base),
                            reinterpret_cast<layout::BinCounters*>(base + g.bins_offset),
                            reinterpret_cast<layout::SiteDelta*>(base + g.site_deltas_offset),
                            base + g.stacks_offset, g.stacks_capacity, config.max_sites,
                            config.depth, config.ruby_depth};
    // The header, the bins, the site deltas and the overflow sites are written at once; later
    // slots are backed on claim.
    if (posix_fallocate(g_segment_fd, 0, static_cast<off_t>(g.sites_offset)) != 0 ||
        !reserve_segment_bytes(g.sites_offset, uint64_t{layout::kOverflowSites} * sizeof(layout::SiteRecord))) {
        warn("no space in /dev/shm for a leakwrap segment; this process is not profiled");
        bip::shared_memory_object::remove(name);
        return nullptr;
    }
    return reinterpret_cast<Header*>(base);
}

// The parent's other threads kept counting while its snapshot was copied, bins first and sites
// later, so the copy's bins may be ahead of its sites. In exact mode every block is counted at
// its site too, so the child's bins are rebuilt from its sites: both then describe one moment.
void rebuild_bins_from_sites(uint64_t sites) {
    std::memset(g_segment.bins, 0, uint64_t{layout::kSizeClassCount} * kBinShards * sizeof(layout::BinCounters));
    for (uint64_t index = 0; index < sites; ++index) {
        const layout::SiteRecord* site = site_record(static_cast<uint32_t>(index));
        if (site->state != layout::kReady || site->size_class >= layout::kSizeClassCount) continue;
        layout::BinCounters& bin = g_segment.bins[site->size_class * kBinShards + kSharedBinShard];
        bin.allocs += site->allocs;
        bin.frees += site->frees;
        bin.alloc_bytes += site->alloc_bytes;
        bin.free_bytes += site->free_bytes;
    }
}

void publish(Header* h) { std::atomic_ref<uint32_t>(h->state).store(layout::kReady, std::memory_order_release); }

}  // namespace

// Which reservation mark covers a segment offset.
static Table table_of(uint64_t offset) {
    const Geometry& g = g_geometry;
    return offset >= g.strings_offset   ? kStringsTable
           : offset >= g.modules_offset ? kModulesTable
           : offset >= g.stacks_offset  ? kStacksTable
                                        : kSitesTable;
}

static uint64_t table_end(Table table) {
    const Geometry& g = g_geometry;
    switch (table) {
        case kSitesTable: return g.stacks_offset;
        case kStacksTable: return g.modules_offset;
        case kModulesTable: return g.strings_offset;
        default: return g.size;
    }
}

bool reserve_segment_bytes(uint64_t offset, uint64_t length) {
    LEAKWRAP_CHECK(inside_leakwrap());
    Table table = table_of(offset);
    // Invariant: everything of the table below `reserved` is backed. Each reservation starts at
    // the mark it read, so concurrent claimers can never leave a hole below the new mark.
    std::atomic<uint64_t>& reserved = g_reserved_until[table];
    uint64_t needed_end = offset + length;
    uint64_t mark = reserved.load(std::memory_order_acquire);
    if (needed_end <= mark) return true;
    uint64_t chunk_end = std::min(align_up(needed_end, kReserveChunk), table_end(table));
    if (needed_end > chunk_end ||
        posix_fallocate(g_segment_fd, static_cast<off_t>(mark),
                        static_cast<off_t>(chunk_end - mark)) != 0)
        return false;
    while (mark < chunk_end && !reserved.compare_exchange_weak(mark, chunk_end)) {
    }
    return true;
}

bool intern_string(const char* text, std::size_t length, layout::StringRef* out) {
    Header* h = g_segment.header;
    std::atomic_ref<uint32_t> used(h->strings_used);
    uint32_t offset = used.load(std::memory_order_relaxed);
    std::size_t with_nul = length + 1;
    do {
        if (with_nul > h->strings_capacity - offset) return false;
    } while (!used.compare_exchange_weak(offset, offset + static_cast<uint32_t>(with_nul)));
    if (!reserve_segment_bytes(h->strings_offset + offset, with_nul)) return false;
    std::byte* target = g_segment.base + h->strings_offset + offset;
    std::memcpy(target, text, length);
    target[length] = std::byte{0};
    *out = layout::StringRef{offset, static_cast<uint32_t>(length)};
    return true;
}

uint64_t claim_stack_bytes(uint64_t bytes) {
    std::atomic_ref<uint64_t> used(g_segment.header->stacks_used);
    uint64_t offset = used.load(std::memory_order_relaxed);
    do {
        if (bytes > g_segment.stacks_capacity - offset) return UINT64_MAX;
    } while (!used.compare_exchange_weak(offset, offset + bytes, std::memory_order_relaxed));
    if (!reserve_segment_bytes(g_geometry.stacks_offset + offset, bytes)) return UINT64_MAX;
    return offset;
}

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
    for (uint32_t entry = 0; entry < kBinShards * kSiteDeltaSlots; ++entry)
        g_segment.site_deltas[entry].site = layout::kNoDeltaSite;
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

// Threads go on counting while the snapshot is copied, and a copy taken word by word can catch
// an allocation and its free between reading a counter's allocations and its frees: more frees
// than allocations. Reading the allocation side once more afterwards gives a cut in which every
// free copied has its allocation copied too (a block is counted allocated before it is freed).
// Sites, site deltas and bins all keep allocs at +0 and alloc_bytes at +16 of their counters.
static void recopy_allocation_counts(uint64_t sites) {
    auto recopy = [](uint64_t* live) {
        auto* copy = reinterpret_cast<uint64_t*>(g_fork_snapshot + (reinterpret_cast<std::byte*>(live) - g_segment.base));
        copy[0] = std::atomic_ref<uint64_t>(live[0]).load(std::memory_order_acquire);
        copy[2] = std::atomic_ref<uint64_t>(live[2]).load(std::memory_order_acquire);
    };
    static_assert(offsetof(layout::SiteRecord, alloc_bytes) - offsetof(layout::SiteRecord, allocs) == 16);
    static_assert(offsetof(layout::SiteDelta, alloc_bytes) - offsetof(layout::SiteDelta, allocs) == 16);
    static_assert(offsetof(layout::BinCounters, alloc_bytes) - offsetof(layout::BinCounters, allocs) == 16);
    for (uint64_t index = 0; index < sites; ++index) recopy(&site_record(static_cast<uint32_t>(index))->allocs);
    for (uint32_t entry = 0; entry < kBinShards * kSiteDeltaSlots; ++entry)
        recopy(&g_segment.site_deltas[entry].allocs);
    for (uint32_t bin = 0; bin < layout::kSizeClassCount * kBinShards; ++bin) recopy(&g_segment.bins[bin].allocs);
}

void snapshot_segment_for_fork() {
    const Header* h = g_segment.header;
    if (h == nullptr) return;
    void* copy = mmap(nullptr, h->segment_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (copy == MAP_FAILED) return;
    g_fork_snapshot = static_cast<std::byte*>(copy);
    g_fork_snapshot_size = h->segment_size;
    // Only backed pages are read: a slot claimed when /dev/shm had no room left was never
    // backed, and touching it would raise SIGBUS in the host.
    auto copy_range = [&](uint64_t offset, uint64_t length) {
        uint64_t backed = g_reserved_until[table_of(offset)].load(std::memory_order_acquire);
        if (offset < h->sites_offset) backed = h->sites_offset;  // reserved at creation
        uint64_t end = std::min(offset + length, backed);
        if (end > offset) std::memcpy(g_fork_snapshot + offset, g_segment.base + offset, end - offset);
    };
    uint64_t sites = std::min<uint64_t>(h->sites_claimed, h->site_capacity);
    uint64_t modules = std::min<uint64_t>(h->modules_claimed, h->module_capacity);
    hold_site_delta_moves();
    copy_range(0, h->sites_offset);  // header, bins and site deltas
    copy_range(h->sites_offset, sites * sizeof(layout::SiteRecord));
    recopy_allocation_counts(sites);
    release_site_delta_moves();
    copy_range(h->stacks_offset, std::min(h->stacks_used, h->stacks_capacity));
    copy_range(h->modules_offset, modules * h->module_record_size);
    copy_range(h->strings_offset, std::min(h->strings_used, h->strings_capacity));
}

void discard_fork_snapshot() {
    if (g_fork_snapshot != nullptr) munmap(g_fork_snapshot, g_fork_snapshot_size);
    g_fork_snapshot = nullptr;
}

bool adopt_fork_snapshot_in_child(const Config& config) {
    if (g_fork_snapshot == nullptr) return false;
    int parent_pid = g_segment.header->pid;
    Geometry g = geometry_for(config);
    Header* h = map_new_segment(config, g);
    if (h == nullptr) {
        g_segment = SegmentView{};
        discard_fork_snapshot();
        return false;
    }
    const auto* parent = reinterpret_cast<const Header*>(g_fork_snapshot);
    uint64_t sites = std::min<uint64_t>(parent->sites_claimed, parent->site_capacity);
    uint64_t modules = std::min<uint64_t>(parent->modules_claimed, parent->module_capacity);
    uint64_t strings = std::min(parent->strings_used, parent->strings_capacity);
    uint64_t stacks = std::min(parent->stacks_used, parent->stacks_capacity);
    bool reserved = reserve_segment_bytes(g.sites_offset, sites * sizeof(layout::SiteRecord)) &&
                    (stacks == 0 || reserve_segment_bytes(g.stacks_offset, stacks)) &&
                    (modules == 0 ||
                     reserve_segment_bytes(g.modules_offset, modules * sizeof(layout::ModuleRecord))) &&
                    (strings == 0 || reserve_segment_bytes(g.strings_offset, strings));
    if (!reserved) {
        warn("no space in /dev/shm for the forked child's segment; the child is not profiled");
        unlink_segment();
        g_segment = SegmentView{};
        discard_fork_snapshot();
        return false;
    }
    std::memcpy(g_segment.base, g_fork_snapshot, g.sites_offset);  // header, bins, site deltas
    std::memcpy(g_segment.base + g.sites_offset, g_fork_snapshot + g.sites_offset,
                sites * sizeof(layout::SiteRecord));
    std::memcpy(g_segment.base + g.stacks_offset, g_fork_snapshot + g.stacks_offset, stacks);
    std::memcpy(g_segment.base + g.modules_offset, g_fork_snapshot + g.modules_offset,
                modules * sizeof(layout::ModuleRecord));
    std::memcpy(g_segment.base + g.strings_offset, g_fork_snapshot + g.strings_offset, strings);
    discard_fork_snapshot();
    move_all_site_deltas_to_records(sites);
    if (h->sample_interval == 0) rebuild_bins_from_sites(sites);
    h->state = layout::kEmpty;
    h->process_state = layout::kProcessRunning;
    fill_identity(h, parent_pid);
    publish(h);
    return true;
}

}  // namespace leakwrap
