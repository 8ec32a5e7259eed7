// The one contract between libleakwrap.so (the writer) and leakwrap-report (the reader):
// the layout of the per-process shared-memory segment /dev/shm/leakwrap.<pid>.
//
// Rules both sides rely on:
//  - Every position is an offset from the start of the segment, never a pointer, so the
//    reader needs nothing of the target's address space to walk it.
//  - All structs are standard-layout, trivially copyable and built from fixed-width integers;
//    the writer updates the fields marked "atomic" through std::atomic_ref, the reader copies the
//    segment and parses the copy with bounds checks (it never trusts an offset or a count).
//  - A record becomes visible only when its `state` word turns to kReady (release store by the
//    writer, read after an acquire load by the reader), so a reader never sees a half-written one.
//  - Site and module slots are handed out in order (bump allocation): a slot at or beyond
//    `*_claimed` is never ready. A string is reserved in `strings_used` before it is written, and
//    written before the record that names it is published.
//  - The segment file is sparse: the writer backs pages (fallocate) only as the tables fill. A
//    reader copies only the claimed ranges; reading the rest through a shared mapping would make
//    tmpfs allocate it.
//  - Header.pid is the pid in the file name; boot_id is stored without its newline.
//  - Any change to this file that moves or reinterprets a field bumps kLayoutVersion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace leakwrap::layout {

inline constexpr char kMagic[8] = {'L', 'E', 'A', 'K', 'W', 'R', 'A', 'P'};
inline constexpr uint32_t kLayoutVersion = 3;

// Segment name, as given to shm_open (the file is /dev/shm/leakwrap.<pid>).
inline constexpr const char* kSegmentPrefix = "leakwrap.";
inline constexpr const char* kShmDirectory = "/dev/shm";

// Limits that keep a segment walkable in bounded time and memory.
inline constexpr uint32_t kMaxDepth = 64;             // frames per stack
inline constexpr uint32_t kMaxSiteCapacity = 1u << 22;  // 4M sites
inline constexpr uint32_t kBuildIdMax = 32;           // bytes of GNU build-id kept


// Values of the `state` words of records.
inline constexpr uint32_t kEmpty = 0;      // slot not (yet) written
inline constexpr uint32_t kReady = 1;      // fully written, visible to readers
inline constexpr uint32_t kAbandoned = 2;  // claimed by a thread that lost an insertion race

// Header.process_state: how the owning process left (the reader also checks the pid).
inline constexpr uint32_t kProcessRunning = 0;
inline constexpr uint32_t kProcessExited = 1;  // normal exit with LEAKWRAP_KEEP=1

// Marks "no string" where a string is named by its pool offset alone.
inline constexpr uint32_t kNoString = 0xffffffffu;

// A string in the segment's string pool: `length` bytes at strings_offset + offset, followed by
// a NUL (so a string can also be named by its offset alone). An empty path means the pool was
// full when the module was recorded.
struct StringRef {
    uint32_t offset;
    uint32_t length;
};

struct alignas(64) Header {
    char magic[8];
    uint32_t layout_version;
    uint32_t header_size;     // sizeof(Header) of the writer
    uint64_t segment_size;    // bytes of the whole segment

    // Who owns this segment. start_time is field 22 of /proc/<pid>/stat (clock ticks since
    // boot); with boot_id it tells a live owner from a recycled pid.
    int32_t pid;
    int32_t parent_pid;       // for a child made by fork(): the parent's pid, else getppid()
    uint64_t start_time_ticks;
    uint64_t created_unix_ns;
    char boot_id[40];         // /proc/sys/kernel/random/boot_id, NUL-padded
    StringRef exe_path;       // readlink(/proc/self/exe)
    StringRef command_line;   // /proc/self/cmdline, arguments separated by spaces

    // Capacities and record geometry, fixed at creation.
    uint32_t max_depth;           // frames kept per site (LEAKWRAP_DEPTH)
    uint32_t site_capacity;       // slots in the site table, overflow site included
    uint32_t site_record_size;    // bytes per slot, >= sizeof(SiteRecord) + 8 * max_depth
    uint32_t module_capacity;
    uint32_t module_record_size;  // bytes per module slot, >= sizeof(ModuleRecord)
    uint32_t strings_capacity;    // bytes in the string pool
    uint64_t sites_offset;
    uint64_t modules_offset;
    uint64_t strings_offset;
    uint64_t bins_offset;         // kSizeClassCount x bin_shards BinCounters, class-major
    uint32_t bin_shards;
    uint32_t site_delta_slots;    // SiteDelta entries per bin shard (a power of two, or 0)
    uint64_t site_deltas_offset;  // bin_shards x site_delta_slots SiteDelta, shard-major
    // 0: every allocation is attributed to its site (exact mode). Otherwise LEAKWRAP_SAMPLE:
    // the mean number of bytes between sampled allocations (Poisson sampling by bytes); site
    // counters then count sampled blocks only, and a reader estimates the true numbers by
    // dividing by the sampling probability 1 - exp(-size / sample_interval). Bins and totals
    // are exact in both modes.
    uint64_t sample_interval;

    // Growing parts (atomic). Claimed counts may exceed capacities; readers clamp.
    uint32_t sites_claimed;      // slots handed out, overflow site included
    uint32_t modules_claimed;
    uint32_t strings_used;       // bytes of the string pool handed out
    uint32_t module_generation;  // bumped whenever the module list changes
    uint64_t lost_sites;         // allocations of new stacks counted in an overflow site
    uint32_t process_state;      // kProcessRunning / kProcessExited
    uint32_t state;              // kReady once the fields above are valid
};

// One allocation call site: the key is (native stack, Ruby location, size class), so that the
// size-class bins can name the sites that fill them. Counters are atomic;
// live = allocs - frees, alloc_bytes - free_bytes, after adding the site's SiteDelta entries.
struct alignas(64) SiteRecord {
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
    uint32_t state;              // kEmpty / kReady / kAbandoned
    uint32_t depth;              // frames used, <= Header::max_depth
    // Header::module_generation when the stack was captured. It may predate the scan that
    // recorded a module of this stack (the writer never waits for a scan in progress): a reader
    // that finds no module of the right generation falls back to the address range alone.
    uint32_t module_generation;
    uint32_t size_class;         // size_class_of() of every block counted here
    uint64_t stack_hash;
    uint32_t ruby_file;          // string pool offset of the Ruby source file, or kNoString
    uint32_t ruby_line;          // Ruby source line (0 when ruby_file is kNoString)
    // followed by uint64_t frames[max_depth]: return addresses, innermost (malloc's caller) first
};

// Exact per-size-class counters, summed over all blocks whatever their site. Kept in shards so
// that threads do not contend on one cache line; a reader sums the shards of each class.
// Totals are the sums over all classes.
struct alignas(64) BinCounters {
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
};

// Counts not yet added to a site record. The thread that owns a bin shard also owns that shard's
// SiteDelta entries (direct-mapped by site index) and counts there with plain stores, so threads
// allocating from one site never share its record's cache line. A site's counts are its
// record's plus every entry naming it. An entry whose `site` is kNoDeltaSite holds nothing; the
// owner sets it so while it moves the entry's counts into the record (atomic adds), so a reader
// copying meanwhile may briefly see fewer counts, never more.
struct SiteDelta {
    uint32_t site;  // site index, or kNoDeltaSite
    uint32_t unused;
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
};

inline constexpr uint32_t kNoDeltaSite = 0xffffffffu;

// One loaded module (executable, shared library). Append-only: a module that is unloaded keeps
// its record with unload_generation set, so stacks captured while it was mapped still resolve.
struct alignas(64) ModuleRecord {
    uint32_t state;              // kEmpty / kReady
    uint32_t load_generation;    // module_generation at which it was seen mapped
    uint32_t unload_generation;  // atomic; kStillLoaded while mapped
    uint32_t build_id_length;
    StringRef path;
    uint64_t load_bias;          // dlpi_addr: runtime address = ELF vaddr + load_bias
    uint64_t start;              // lowest runtime address of its PT_LOAD segments
    uint64_t end;                // one past the highest
    uint8_t build_id[kBuildIdMax];
};

inline constexpr uint32_t kStillLoaded = 0xffffffffu;

// Byte size of a site slot for a given depth, rounded to whole cache lines.
constexpr uint32_t site_record_size_for(uint32_t max_depth) {
    return static_cast<uint32_t>((sizeof(SiteRecord) + 8u * max_depth + 63u) / 64u * 64u);
}

inline constexpr std::size_t kFramesOffsetInSite = sizeof(SiteRecord);

// Size classes (bins), jemalloc-like: 8, 16, then steps of 16 up to 128, then four classes per
// doubling (160, 192, 224, 256, 320, …) up to 4 MiB, then one class per power of two up to
// 2^40, and a last class for anything larger. A block of n bytes (the size the program asked
// for) falls in the smallest class whose upper bound is >= n.
inline constexpr uint32_t kSmallClasses = 9;                       // 8, 16, 32, …, 128
inline constexpr uint32_t kFirstDoublingLog2 = 7;                  // groups (2^k, 2^(k+1)], k >= 7
inline constexpr uint32_t kLastDoublingLog2 = 21;                  // … up to 2^22 = 4 MiB
inline constexpr uint32_t kDoublingClasses = 4 * (kLastDoublingLog2 - kFirstDoublingLog2 + 1);
inline constexpr uint32_t kFirstLargeLog2 = kLastDoublingLog2 + 2;  // 8 MiB
inline constexpr uint32_t kLastLargeLog2 = 40;
inline constexpr uint32_t kLargeClasses = kLastLargeLog2 - kFirstLargeLog2 + 1;
inline constexpr uint32_t kSizeClassCount = kSmallClasses + kDoublingClasses + kLargeClasses + 1;

// Inclusive upper bound of a class; the last class is unbounded.
constexpr uint64_t size_class_limit(uint32_t size_class) {
    if (size_class < kSmallClasses) return size_class == 0 ? 8 : 16 * uint64_t{size_class};
    size_class -= kSmallClasses;
    if (size_class < kDoublingClasses) {
        uint32_t log2 = kFirstDoublingLog2 + size_class / 4;
        return (uint64_t{1} << log2) + (size_class % 4 + 1) * (uint64_t{1} << (log2 - 2));
    }
    size_class -= kDoublingClasses;
    if (size_class < kLargeClasses) return uint64_t{1} << (kFirstLargeLog2 + size_class);
    return UINT64_MAX;
}

constexpr uint32_t size_class_of(uint64_t size) {
    if (size <= 128) return size <= 8 ? 0 : static_cast<uint32_t>((size + 15) / 16);
    if (size <= (uint64_t{1} << (kLastDoublingLog2 + 1))) {
        uint32_t log2 = 63 - static_cast<uint32_t>(__builtin_clzll(size - 1));  // 2^log2 < size
        uint64_t step = uint64_t{1} << (log2 - 2);
        uint64_t quarter = (size - (uint64_t{1} << log2) + step - 1) / step;  // 1..4
        return kSmallClasses + 4 * (log2 - kFirstDoublingLog2) + static_cast<uint32_t>(quarter) - 1;
    }
    if (size > (uint64_t{1} << kLastLargeLog2)) return kSizeClassCount - 1;
    uint32_t log2 = 64 - static_cast<uint32_t>(__builtin_clzll(size - 1));  // size <= 2^log2
    return kSmallClasses + kDoublingClasses + (log2 - kFirstLargeLog2);
}

static_assert(size_class_limit(0) == 8 && size_class_limit(1) == 16 && size_class_limit(8) == 128);
static_assert(size_class_limit(kSmallClasses) == 160 && size_class_limit(kSmallClasses + 4) == 320);
static_assert(size_class_of(0) == 0 && size_class_of(8) == 0 && size_class_of(9) == 1);
static_assert(size_class_of(128) == 8 && size_class_of(129) == kSmallClasses);
static_assert(size_class_of(257) == size_class_of(320) && size_class_of(321) == size_class_of(320) + 1);
static_assert(size_class_limit(size_class_of(uint64_t{1} << 22)) == uint64_t{1} << 22);
static_assert(size_class_limit(size_class_of((uint64_t{1} << 22) + 1)) == uint64_t{1} << 23);
static_assert(size_class_of((uint64_t{1} << 40) + 1) == kSizeClassCount - 1);

// Slots [0, kSizeClassCount) are the overflow sites, slot i for size class i: allocations from
// new call sites that arrive after the table is full are counted there, so totals and bins stay
// exact. Their depth is 0; they are always ready.
inline constexpr uint32_t kOverflowSites = kSizeClassCount;
inline constexpr uint32_t kMinSiteCapacity = kOverflowSites + 1;
constexpr bool is_overflow_site(uint32_t index) { return index < kOverflowSites; }

static_assert(std::is_standard_layout_v<Header> && std::is_trivially_copyable_v<Header>);
static_assert(std::is_standard_layout_v<SiteRecord> && std::is_trivially_copyable_v<SiteRecord>);
static_assert(std::is_standard_layout_v<ModuleRecord> && std::is_trivially_copyable_v<ModuleRecord>);
static_assert(std::is_standard_layout_v<SiteDelta> && std::is_trivially_copyable_v<SiteDelta>);
static_assert(sizeof(SiteRecord) == 64 && sizeof(SiteDelta) == 40);
static_assert(sizeof(ModuleRecord) % 64 == 0 && sizeof(Header) % 64 == 0);

}  // namespace leakwrap::layout
