// The one contract between libleakwrap.so (the writer) and leakwrap-report (the reader):
// the layout of the per-process shared-memory segment /dev/shm/leakwrap.<pid>.
//
// What the segment holds: a header; exact per-size-class counters (bins); a table of distinct
// stacks, each stored once (native return addresses, and a reference to a Ruby backtrace whose
// file:line frames are stored in the same table as a tree, each shared frame once); a table of
// sites, one per (stack, size class), each its counters and a reference to its stack; per-thread
// counts not yet added to a site (site deltas); the loaded modules; a pool of strings; what the
// allocator below says of its own memory (AllocatorStatistics).
//
// Rules both sides rely on, numbered so that code can cite them:
//  R1 Every position is an offset from the start of the segment (or, for a stack, from the start
//     of the stack table), never a pointer, so the reader needs nothing of the target's address
//     space to walk it.
//  R2 All structs are standard-layout, trivially copyable and built from fixed-width integers,
//     little-endian; every field's offset is pinned below. The writer updates the fields marked
//     "atomic" through std::atomic_ref; the reader copies the segment and parses the copy with
//     bounds checks (it never trusts an offset or a count).
//  R3 A record becomes visible only when its `state` word turns to kReady (release store by the
//     writer, read after an acquire load by the reader), so a reader never sees a half-written one.
//  R4 Slots are handed out in order (bump allocation): a site or module slot at or beyond
//     `*_claimed`, and stack bytes at or beyond `stacks_used`, are never ready. A string is
//     reserved in `strings_used` before it is written, and written before the record that names
//     it is published.
//  R5 A site's stack is published before the site: a ready site names a ready stack.
//  R6 The segment file is sparse: the writer backs pages (fallocate) only as the tables fill.
//     A reader copies only the claimed ranges; reading the rest through a shared mapping would
//     make tmpfs allocate it. So too the bins and site deltas: only the shards below
//     Header::bin_shards_backed and the last one may be read (layout 13 on; all before).
//  R7 Header.pid is the pid in the file name; boot_id is stored without its newline.
//  R8 A Ruby frame record has no state word: it is written whole, and never changed, before any
//     stack or frame record names it, so it is visible through the ready stack that names it
//     (R3). Its caller lies in the table before it, and its depth is its caller's plus one.
//  R9 A block is counted, allocated and freed, at the record of its (stack, size class, birth
//     cell): the cell of the moment it was allocated (or reallocated), read from the coarse
//     monotonic clock, so a few milliseconds late at most. Overflow sites have no birth cell.
// R10 A reader that copies the site records and then the delta entries may miss counts that an
//     entry moved into a record in between (never count them twice); SiteDelta::moves tells it
//     which sites' counts may be short.
// R11 The allocator's statistics (AllocatorStatistics) are rewritten whole, now and then, under a
//     sequence word: odd while the writer rewrites them, bumped to even when they are whole again.
//     A reader keeps a copy taken between two equal, even loads of it.
// R12 A block's free is counted (in a record or a delta entry, frees and free_bytes) after its
//     allocation was (allocs and alloc_bytes), wherever each was counted. A reader that loads
//     every place a site counts in, frees first and allocations after, never sees more frees than
//     allocations, unless an entry moved in between (R10); one that loads them place by place can.
//
// Version policy: any change that moves or reinterprets a field bumps kLayoutVersion. The
// reader parses the current version and, where the difference is a translation it can make,
// the previous one (kOldestReadableVersion); for anything older it says which leakwrap-report
// reads it (those layouts differ in their tables, not only in fields).
// Version history: 3 = one record per (native stack, Ruby line, size class) with its frames
// inline; 4 = stacks stored once and shared, Ruby backtraces, compact sites; 5 = bins
// shard-major (bin_index), so that a thread's counters share pages instead of touching one page
// per size class; 6 = Ruby frames stored once as a tree (RubyFrameRecord) that stacks name,
// instead of inline in every stack, and stack records without the writer's hash (16 bytes); 7 =
// the header's reserved word counts the writer's private memory (private_kib); 8 = every site
// record is also one birth cell's (SiteRecord::birth_cell, the size class now one byte), and the
// header grew to 320 bytes for the birth grid (birth_origin_boot_ns, birth_floor_ns, birth_cells),
// and a delta entry counts its moves (SiteDelta::moves, a reserved word before); 9 = the
// allocator's own statistics (Header::allocator_stats_offset, a reserved word before, and
// AllocatorStatistics in the header's page); 10 = the blocks counted when the allocator was read
// (AllocatorStatistics::counted, padding before), so that a reader can tell a count that is still
// current from one that activity since has made stale; 11 = Header::flags (a reserved word
// before), whose kBinsSampled says that the bins count sampled blocks only (sampling mode with
// no header on unsampled blocks); 12 = Header::process_state may be kProcessReplacedByExec;
// 13 = Header::bin_shards_backed (a reserved word before): the shards of the bins and site deltas
// are backed as threads claim them, no longer all at creation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace leakwrap::layout {

inline constexpr char kMagic[8] = {'L', 'E', 'A', 'K', 'W', 'R', 'A', 'P'};
inline constexpr uint32_t kLayoutVersion = 13;
// Layout 12 differs from 13 only in Header::bin_shards_backed (reserved, 0: every shard backed).
// Layout 11 differs from 12 only in that its process_state is never kProcessReplacedByExec.
// Layout 10 differs from 11 only in Header::flags (reserved, 0: the bins count every block).
// Layout 9 differs from 10 only in AllocatorStatistics::counted (padding, zeros: "not known").
// Layout 8 differs from 9 only in Header::allocator_stats_offset (reserved, 0: "no statistics").
// Layout 7 differs from 8 only in its header's size (256: the birth grid's fields, which lie
// where the bins' page begins with zeros in those layouts, read as "no birth times") and in
// SiteRecord::size_class's high byte (0 in those layouts, read as birth cell 0); layout 6 from 7
// only in Header::private_kib (reserved, 0); layout 5 from 6 only in its stack records
// (StackRecordV5: the writer's hash, Ruby frames inline). So all eight are still read.
inline constexpr uint32_t kOldestReadableVersion = 5;

// Segment name, as given to shm_open (the file is /dev/shm/leakwrap.<pid>).
inline constexpr const char* kSegmentPrefix = "leakwrap.";
inline constexpr const char* kShmDirectory = "/dev/shm";

// Limits that keep a segment walkable in bounded time and memory.
inline constexpr uint32_t kMaxDepth = 64;               // native frames per stack
inline constexpr uint32_t kMaxRubyDepth = 64;           // Ruby frames per stack
inline constexpr uint32_t kMaxSiteCapacity = 1u << 26;  // 64M sites
inline constexpr uint64_t kMaxStackTableBytes = uint64_t{16} << 30;
inline constexpr uint32_t kBuildIdMax = 32;  // bytes of GNU build-id kept

// Values of the `state` words of records.
inline constexpr uint32_t kEmpty = 0;      // slot not (yet) written
inline constexpr uint32_t kReady = 1;      // fully written, visible to readers
inline constexpr uint32_t kAbandoned = 2;  // claimed by a thread that lost an insertion race

// Header.process_state: how the owning process left (the reader also checks the pid).
inline constexpr uint32_t kProcessRunning = 0;
inline constexpr uint32_t kProcessExited = 1;  // normal exit with LEAKWRAP_KEEP=1
// The process called exec (layout 12 on): the image that wrote the segment is gone, whether or
// not the pid lives on. A profiled new image replaces the segment when it starts; one that is
// not profiled (a program run without the preload, a static or set-user-ID one) leaves it, and
// it is garbage once the process is gone. Running again if the exec failed.
inline constexpr uint32_t kProcessReplacedByExec = 2;

// Header.flags.
inline constexpr uint32_t kBinsSampled = 1;  // the bins count sampled blocks only (sample_interval)

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
    uint32_t header_size;   // sizeof(Header) of the writer
    uint64_t segment_size;  // bytes of the whole segment

    // Who owns this segment. start_time is field 22 of /proc/<pid>/stat (clock ticks since
    // boot); with boot_id it tells a live owner from a recycled pid.
    int32_t pid;
    int32_t parent_pid;  // for a child made by fork(): the parent's pid, else getppid()
    uint64_t start_time_ticks;
    uint64_t created_unix_ns;
    char boot_id[40];        // /proc/sys/kernel/random/boot_id, NUL-padded
    StringRef exe_path;      // readlink(/proc/self/exe)
    StringRef command_line;  // /proc/self/cmdline, arguments separated by spaces

    // Capacities and record geometry, fixed at creation.
    uint32_t max_depth;         // native frames kept per stack (LEAKWRAP_DEPTH)
    uint32_t max_ruby_depth;    // Ruby frames kept per stack (LEAKWRAP_RUBY_DEPTH)
    uint32_t site_capacity;     // slots in the site table, overflow sites included
    uint32_t site_record_size;  // bytes per site slot, >= sizeof(SiteRecord)
    uint64_t stacks_capacity;   // bytes in the stack table
    uint32_t module_capacity;
    uint32_t module_record_size;  // bytes per module slot, >= sizeof(ModuleRecord)
    uint32_t strings_capacity;    // bytes in the string pool
    uint32_t bin_shards;
    uint64_t sites_offset;
    uint64_t stacks_offset;
    uint64_t modules_offset;
    uint64_t strings_offset;
    uint64_t bins_offset;         // bin_shards x kSizeClassCount BinCounters, shard-major
    uint64_t site_deltas_offset;  // bin_shards x site_delta_slots SiteDelta, shard-major
    uint32_t site_delta_slots;    // SiteDelta entries per bin shard (a power of two, or 0)
    // Atomic, and growing though it stands among the fixed fields (it took their reserved word):
    // KiB of process-private memory the writer's own tables hold (its stack index, the sites'
    // chains, the Ruby frame index, the frame-size table, each thread's memo of call sites),
    // counted as they grow. 0 in layouts before 7.
    uint32_t private_kib;
    // 0: every allocation is attributed to its site (exact mode). Otherwise LEAKWRAP_SAMPLE:
    // the mean number of bytes between sampled allocations (Poisson sampling by bytes); site
    // counters then count sampled blocks only, and a reader estimates the true numbers by
    // dividing by the sampling probability 1 - exp(-size / sample_interval). The bins count
    // every block, exactly, unless `flags` has kBinsSampled: then they too count the sampled
    // blocks only, and are estimated the same way.
    uint64_t sample_interval;

    // Growing parts (atomic). Claimed counts may exceed capacities; readers clamp.
    uint64_t stacks_used;    // bytes of the stack table handed out
    uint32_t sites_claimed;  // slots handed out, overflow sites included
    uint32_t modules_claimed;
    uint32_t strings_used;       // bytes of the string pool handed out
    uint32_t module_generation;  // bumped whenever the module list changes
    uint64_t lost_sites;         // allocations of new stacks counted in an overflow site
    uint64_t reduced_stacks;     // stacks recorded by their innermost frames only (kStackReduced)
    uint32_t process_state;      // kProcessRunning / kProcessExited / kProcessReplacedByExec
    uint32_t state;              // kReady once the fields above are valid

    // The birth grid (fixed at creation; layout 8 on): when the blocks counted at a site were
    // allocated, by birth cell (see birth_cell_start_ns). Birth time 0 is CLOCK_BOOTTIME
    // birth_origin_boot_ns, when the segment of the first process was made; a child made by
    // fork() keeps its parent's, as it keeps the parent's blocks. 0 birth_cells: none recorded
    // (a layout before 8).
    uint64_t birth_origin_boot_ns;
    uint64_t birth_floor_ns;  // the width of the first kBirthLinearCells cells
    uint32_t birth_cells;     // <= kMaxBirthCells; the last one has no end
    uint32_t flags;           // kBinsSampled (layout 11 on; a reserved 0 before)
    // Where the AllocatorStatistics lie (fixed at creation; layout 9 on); 0: none (a layout
    // before 9).
    uint64_t allocator_stats_offset;
    // Atomic, growing (layout 13 on): the shards 0 to bin_shards_backed - 1 of the bins and site
    // deltas are backed, besides the last (shared) one, which is backed at creation. The others
    // have never counted anything and read as zeros, but must not be read through a shared
    // mapping (R6). Every shard is backed in layouts before 13.
    uint32_t bin_shards_backed;
    uint32_t reserved_word;
    uint64_t reserved_for_growth[3];
};

// One distinct stack, stored once in the stack table and named by the sites that allocate
// through it. Records follow each other; a record's reference is its offset from stacks_offset
// divided by kStackAlignment. A record is 16 bytes, then uint64_t frames[native_depth] (return
// addresses, innermost - malloc's caller - first). For a thread running Ruby code, `ruby` names
// the innermost frame of its Ruby backtrace (a RubyFrameRecord in the same table), and its
// native frames go only from the allocator up to where the Ruby VM called in (see the preload's
// site_table.cpp).
struct StackRecord {
    uint32_t state;  // kEmpty / kReady / kAbandoned
    // Header::module_generation when the stack was captured. It may predate the scan that
    // recorded a module of this stack (the writer never waits for a scan in progress): a reader
    // that finds no module of the right generation falls back to the address range alone.
    uint32_t module_generation;
    uint8_t native_depth;  // <= Header::max_depth
    uint8_t ruby_depth;    // <= Header::max_ruby_depth; the depth of `ruby`'s record
    uint16_t flags;        // kStackReduced
    uint32_t ruby;         // reference of the innermost RubyFrameRecord; kNoRubyFrame if none
};

// A Ruby source position.
struct RubyFrame {
    uint32_t file;  // string pool offset of the Ruby source file (NUL-terminated)
    uint32_t line;  // 0 when unknown
};

// One frame of a Ruby backtrace, stored once in the stack table (referenced like a stack) and
// shared by every backtrace that has the same frames from it outward: a stack names its
// innermost Ruby frame, each frame its caller, the next outer one. Backtraces of one program
// differ mostly in their inner frames, so their outer parts are stored once (R8).
struct RubyFrameRecord {
    RubyFrame frame;
    uint32_t caller;  // reference of the next outer frame's record; kNoRubyFrame for the outermost kept
    uint32_t depth;   // frames from this one outward: 1 + its caller's depth, 1 for the outermost
};

inline constexpr uint32_t kStackAlignment = 8;
// The stack was cut to its innermost frames because the tables were nearly full (see
// kReducedNativeFrames): still findable by its Ruby line and its innermost native frames.
inline constexpr uint32_t kStackReduced = 1;
inline constexpr uint32_t kReducedNativeFrames = 3;
inline constexpr uint32_t kReducedRubyFrames = 1;
// SiteRecord::stack of the overflow sites, which have no stack.
inline constexpr uint32_t kNoStack = 0xffffffffu;
// StackRecord::ruby without a Ruby backtrace; RubyFrameRecord::caller of the outermost frame.
inline constexpr uint32_t kNoRubyFrame = 0xffffffffu;

constexpr uint64_t stack_record_size(uint32_t native_depth) { return sizeof(StackRecord) + 8ull * native_depth; }

// Layout 5's stack record, which the reader still reads (kOldestReadableVersion): its Ruby frames
// followed its native frames inline, RubyFrame ruby[ruby_depth], innermost first.
struct StackRecordV5 {
    uint64_t hash;
    uint32_t state;
    uint32_t module_generation;
    uint16_t native_depth;
    uint16_t ruby_depth;
    uint32_t flags;
};

constexpr uint64_t stack_record_size_v5(uint32_t native_depth, uint32_t ruby_depth) {
    return sizeof(StackRecordV5) + 8ull * native_depth + sizeof(RubyFrame) * uint64_t{ruby_depth};
}

// One allocation call site in one birth cell: a stack, a size class, so that the size-class bins
// can name the sites that fill them, and the birth cell its blocks were allocated in, so that a
// reader can tell the live memory of a site by age (R9). Counters are atomic; live = allocs -
// frees, alloc_bytes - free_bytes, after adding the site's SiteDelta entries.
struct SiteRecord {
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
    uint32_t stack;      // reference of its StackRecord, kNoStack for an overflow site
    uint8_t size_class;  // size_class_of() of every block counted here
    uint8_t birth_cell;  // when every block counted here was allocated; 0 for an overflow site
    uint16_t state;      // kEmpty / kReady / kAbandoned
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
// copying meanwhile may briefly see fewer counts, never more. An entry never used is all zero
// (site 0 with no counts, which adds nothing): the writer leaves the table's pages untouched
// until a thread counts there. `moves` counts the owner's moves (atomic, bumped once the entry
// names its new site): a reader that sees it change across its read of the site records knows
// which site's counts were in transit meanwhile (R10).
struct SiteDelta {
    uint32_t site;  // site index, or kNoDeltaSite
    uint32_t moves;
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
};

inline constexpr uint32_t kNoDeltaSite = 0xffffffffu;

// What the allocator below the writer says of its own memory, read now and then by a thread
// that allocates (at most once a second, so an idle process's figures date from its last
// allocation), rewritten whole under `sequence` (R11). glibc's come from malloc_info(), per
// arena; jemalloc's from its mallctl() statistics, as a whole. A figure the allocator does not
// give is 0.
inline constexpr uint32_t kAllocatorNotRead = 0;  // not read yet, or an allocator neither of these
inline constexpr uint32_t kAllocatorGlibc = 1;
inline constexpr uint32_t kAllocatorJemalloc = 2;
inline constexpr uint32_t kMaxArenaStatistics = 64;

struct ArenaStatistics {
    uint64_t system_bytes;  // what the arena got from the system and holds (glibc: "system current")
    uint64_t free_bytes;    // in its free chunks, its top chunk included
    // Of free_bytes, what lies in whole pages inside free chunks, estimated from the sizes of the
    // chunks, and the whole pages of the top chunk: what malloc_trim(0) would hand back to the
    // system at most (pages never touched, or handed back before, are not resident already).
    uint64_t returnable_bytes;
    uint64_t free_chunks;  // the top chunk included
};

// The blocks counted in the bins, summed over their shards and classes.
struct BlockTotals {
    uint64_t allocs;
    uint64_t frees;
    uint64_t alloc_bytes;
    uint64_t free_bytes;
};

struct alignas(64) AllocatorStatistics {
    uint32_t sequence;      // atomic; odd while rewritten (R11)
    uint32_t allocator;     // kAllocator*
    uint64_t taken_ns;      // when, on the birth grid's clock (time since the origin)
    uint64_t took_ns;       // how long the reading took
    uint64_t in_use_bytes;  // handed out, leakwrap's headers and own blocks included
    uint64_t free_bytes;    // kept free: glibc's free chunks; jemalloc's active - allocated
    // What the allocator would hand back if asked: glibc, the whole free pages (malloc_trim(0));
    // jemalloc, its dirty pages (an arena's purge).
    uint64_t returnable_bytes;
    uint64_t system_bytes;    // its heaps' memory from the system (glibc), its mapped memory (jemalloc)
    uint64_t mmapped_bytes;   // glibc: blocks in mappings of their own
    uint64_t resident_bytes;  // jemalloc: "stats.resident"
    uint64_t metadata_bytes;  // jemalloc: "stats.metadata"
    uint32_t arenas;          // entries of `arena` filled, <= kMaxArenaStatistics
    uint32_t arenas_total;    // the allocator's arenas; the totals above count them all
    ArenaStatistics arena[kMaxArenaStatistics];  // glibc's, in malloc_info()'s order: main first
    // The bins' totals as the reading began: every block the reading can show was counted by
    // then (an allocation is counted after the allocator hands it out), so a reader whose bins
    // show the same totals knows that nothing was allocated or freed since (but a free counted
    // while its thread had yet to hand the block back). All zero in layout 9.
    BlockTotals counted;
};

// One loaded module (executable, shared library). Append-only: a module that is unloaded keeps
// its record with unload_generation set, so stacks captured while it was mapped still resolve.
struct alignas(64) ModuleRecord {
    uint32_t state;              // kEmpty / kReady
    uint32_t load_generation;    // module_generation at which it was seen mapped
    uint32_t unload_generation;  // atomic; kStillLoaded while mapped
    uint32_t build_id_length;
    StringRef path;
    uint64_t load_bias;  // dlpi_addr: runtime address = ELF vaddr + load_bias
    uint64_t start;      // lowest runtime address of its PT_LOAD segments
    uint64_t end;        // one past the highest
    uint8_t build_id[kBuildIdMax];
};

inline constexpr uint32_t kStillLoaded = 0xffffffffu;

// The birth grid: cell c < kBirthLinearCells covers [c F, (c + 1) F) of time since the origin (F =
// Header::birth_floor_ns); from kBirthLinearCells F on, each cell lasts an eighth of the time at
// which it starts, so that a birth time is known to an eighth of the process's age at that time
// (or F, early on). The last cell (Header::birth_cells - 1) has no end.
inline constexpr uint32_t kBirthLinearCells = 8;
inline constexpr uint32_t kMaxBirthCells = 128;
inline constexpr uint64_t kBirthFloorNs = 500'000'000;  // what the writer uses

constexpr uint64_t next_birth_cell_start_ns(uint64_t start_ns, uint32_t cell, uint64_t floor_ns) {
    return cell < kBirthLinearCells ? start_ns + floor_ns : start_ns + start_ns / kBirthLinearCells;
}

constexpr uint64_t birth_cell_start_ns(uint32_t cell, uint64_t floor_ns) {
    uint64_t start = 0;
    for (uint32_t c = 0; c < cell; ++c) start = next_birth_cell_start_ns(start, c, floor_ns);
    return start;
}

static_assert(birth_cell_start_ns(8, kBirthFloorNs) == 4'000'000'000 &&
              birth_cell_start_ns(9, kBirthFloorNs) == 4'500'000'000);
// The grid reaches past 50 days before its last cell, and its starts stay far from overflow.
static_assert(birth_cell_start_ns(kMaxBirthCells - 1, kBirthFloorNs) > 50ull * 86400 * 1'000'000'000);
static_assert(birth_cell_start_ns(kMaxBirthCells - 1, kBirthFloorNs) < (uint64_t{1} << 56));

// Size classes (bins), jemalloc-like: 8, 16, then steps of 16 up to 128, then four classes per
// doubling (160, 192, 224, 256, 320, …) up to 4 MiB, then one class per power of two up to
// 2^40, and a last class for anything larger. A block of n bytes (the size the program asked
// for) falls in the smallest class whose upper bound is >= n.
inline constexpr uint32_t kSmallClasses = 9;       // 8, 16, 32, …, 128
inline constexpr uint32_t kFirstDoublingLog2 = 7;  // groups (2^k, 2^(k+1)], k >= 7
inline constexpr uint32_t kLastDoublingLog2 = 21;  // … up to 2^22 = 4 MiB
inline constexpr uint32_t kDoublingClasses = 4 * (kLastDoublingLog2 - kFirstDoublingLog2 + 1);
inline constexpr uint32_t kFirstLargeLog2 = kLastDoublingLog2 + 2;  // 8 MiB
inline constexpr uint32_t kLastLargeLog2 = 40;
inline constexpr uint32_t kLargeClasses = kLastLargeLog2 - kFirstLargeLog2 + 1;
inline constexpr uint32_t kSizeClassCount = kSmallClasses + kDoublingClasses + kLargeClasses + 1;
static_assert(kSizeClassCount <= 128);  // SiteRecord::size_class, and readers' 7 bits for it

// Position of a shard's counters of a class among the BinCounters at bins_offset. Shard-major: a
// thread owns one shard and touches only its pages.
constexpr uint64_t bin_index(uint32_t size_class, uint32_t shard) {
    return uint64_t{shard} * kSizeClassCount + size_class;
}

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
// new stacks that arrive after even the reduced stacks found the tables full are counted there,
// so totals and bins stay exact. They have no stack; they are always ready.
inline constexpr uint32_t kOverflowSites = kSizeClassCount;
inline constexpr uint32_t kMinSiteCapacity = kOverflowSites + 1;
constexpr bool is_overflow_site(uint32_t index) { return index < kOverflowSites; }

// The layout pinned: a reordered or resized field fails to compile.
#define LEAKWRAP_PIN(type, field, offset) static_assert(offsetof(type, field) == (offset), #type "::" #field)
LEAKWRAP_PIN(StringRef, offset, 0);
LEAKWRAP_PIN(StringRef, length, 4);
static_assert(sizeof(StringRef) == 8);
LEAKWRAP_PIN(Header, magic, 0);
LEAKWRAP_PIN(Header, layout_version, 8);
LEAKWRAP_PIN(Header, header_size, 12);
LEAKWRAP_PIN(Header, segment_size, 16);
LEAKWRAP_PIN(Header, pid, 24);
LEAKWRAP_PIN(Header, parent_pid, 28);
LEAKWRAP_PIN(Header, start_time_ticks, 32);
LEAKWRAP_PIN(Header, created_unix_ns, 40);
LEAKWRAP_PIN(Header, boot_id, 48);
LEAKWRAP_PIN(Header, exe_path, 88);
LEAKWRAP_PIN(Header, command_line, 96);
LEAKWRAP_PIN(Header, max_depth, 104);
LEAKWRAP_PIN(Header, max_ruby_depth, 108);
LEAKWRAP_PIN(Header, site_capacity, 112);
LEAKWRAP_PIN(Header, site_record_size, 116);
LEAKWRAP_PIN(Header, stacks_capacity, 120);
LEAKWRAP_PIN(Header, module_capacity, 128);
LEAKWRAP_PIN(Header, module_record_size, 132);
LEAKWRAP_PIN(Header, strings_capacity, 136);
LEAKWRAP_PIN(Header, bin_shards, 140);
LEAKWRAP_PIN(Header, sites_offset, 144);
LEAKWRAP_PIN(Header, stacks_offset, 152);
LEAKWRAP_PIN(Header, modules_offset, 160);
LEAKWRAP_PIN(Header, strings_offset, 168);
LEAKWRAP_PIN(Header, bins_offset, 176);
LEAKWRAP_PIN(Header, site_deltas_offset, 184);
LEAKWRAP_PIN(Header, site_delta_slots, 192);
LEAKWRAP_PIN(Header, private_kib, 196);
LEAKWRAP_PIN(Header, sample_interval, 200);
LEAKWRAP_PIN(Header, stacks_used, 208);
LEAKWRAP_PIN(Header, sites_claimed, 216);
LEAKWRAP_PIN(Header, modules_claimed, 220);
LEAKWRAP_PIN(Header, strings_used, 224);
LEAKWRAP_PIN(Header, module_generation, 228);
LEAKWRAP_PIN(Header, lost_sites, 232);
LEAKWRAP_PIN(Header, reduced_stacks, 240);
LEAKWRAP_PIN(Header, process_state, 248);
LEAKWRAP_PIN(Header, state, 252);
LEAKWRAP_PIN(Header, birth_origin_boot_ns, 256);
LEAKWRAP_PIN(Header, birth_floor_ns, 264);
LEAKWRAP_PIN(Header, birth_cells, 272);
LEAKWRAP_PIN(Header, flags, 276);
LEAKWRAP_PIN(Header, allocator_stats_offset, 280);
LEAKWRAP_PIN(Header, bin_shards_backed, 288);
LEAKWRAP_PIN(Header, reserved_word, 292);
LEAKWRAP_PIN(Header, reserved_for_growth, 296);
static_assert(sizeof(Header) == 320);
// What the header of layouts 5 to 7 took (the birth grid's fields lay beyond it).
inline constexpr uint32_t kHeaderSizeBeforeBirthGrid = 256;
LEAKWRAP_PIN(StackRecord, state, 0);
LEAKWRAP_PIN(StackRecord, module_generation, 4);
LEAKWRAP_PIN(StackRecord, native_depth, 8);
LEAKWRAP_PIN(StackRecord, ruby_depth, 9);
LEAKWRAP_PIN(StackRecord, flags, 10);
LEAKWRAP_PIN(StackRecord, ruby, 12);
static_assert(sizeof(StackRecord) == 16 && sizeof(StackRecord) % kStackAlignment == 0);
LEAKWRAP_PIN(RubyFrame, file, 0);
LEAKWRAP_PIN(RubyFrame, line, 4);
static_assert(sizeof(RubyFrame) == 8);
LEAKWRAP_PIN(RubyFrameRecord, frame, 0);
LEAKWRAP_PIN(RubyFrameRecord, caller, 8);
LEAKWRAP_PIN(RubyFrameRecord, depth, 12);
static_assert(sizeof(RubyFrameRecord) == 16 && sizeof(RubyFrameRecord) % kStackAlignment == 0);
LEAKWRAP_PIN(StackRecordV5, native_depth, 16);
LEAKWRAP_PIN(StackRecordV5, ruby_depth, 18);
LEAKWRAP_PIN(StackRecordV5, flags, 20);
static_assert(sizeof(StackRecordV5) == 24);
LEAKWRAP_PIN(SiteRecord, allocs, 0);
LEAKWRAP_PIN(SiteRecord, frees, 8);
LEAKWRAP_PIN(SiteRecord, alloc_bytes, 16);
LEAKWRAP_PIN(SiteRecord, free_bytes, 24);
LEAKWRAP_PIN(SiteRecord, stack, 32);
LEAKWRAP_PIN(SiteRecord, size_class, 36);
LEAKWRAP_PIN(SiteRecord, birth_cell, 37);
LEAKWRAP_PIN(SiteRecord, state, 38);
static_assert(sizeof(SiteRecord) == 40);
LEAKWRAP_PIN(BinCounters, allocs, 0);
LEAKWRAP_PIN(BinCounters, frees, 8);
LEAKWRAP_PIN(BinCounters, alloc_bytes, 16);
LEAKWRAP_PIN(BinCounters, free_bytes, 24);
static_assert(sizeof(BinCounters) == 64);
LEAKWRAP_PIN(SiteDelta, site, 0);
LEAKWRAP_PIN(SiteDelta, moves, 4);
LEAKWRAP_PIN(SiteDelta, allocs, 8);
LEAKWRAP_PIN(SiteDelta, frees, 16);
LEAKWRAP_PIN(SiteDelta, alloc_bytes, 24);
LEAKWRAP_PIN(SiteDelta, free_bytes, 32);
static_assert(sizeof(SiteDelta) == 40);
LEAKWRAP_PIN(ArenaStatistics, system_bytes, 0);
LEAKWRAP_PIN(ArenaStatistics, free_bytes, 8);
LEAKWRAP_PIN(ArenaStatistics, returnable_bytes, 16);
LEAKWRAP_PIN(ArenaStatistics, free_chunks, 24);
static_assert(sizeof(ArenaStatistics) == 32);
LEAKWRAP_PIN(AllocatorStatistics, sequence, 0);
LEAKWRAP_PIN(AllocatorStatistics, allocator, 4);
LEAKWRAP_PIN(AllocatorStatistics, taken_ns, 8);
LEAKWRAP_PIN(AllocatorStatistics, took_ns, 16);
LEAKWRAP_PIN(AllocatorStatistics, in_use_bytes, 24);
LEAKWRAP_PIN(AllocatorStatistics, free_bytes, 32);
LEAKWRAP_PIN(AllocatorStatistics, returnable_bytes, 40);
LEAKWRAP_PIN(AllocatorStatistics, system_bytes, 48);
LEAKWRAP_PIN(AllocatorStatistics, mmapped_bytes, 56);
LEAKWRAP_PIN(AllocatorStatistics, resident_bytes, 64);
LEAKWRAP_PIN(AllocatorStatistics, metadata_bytes, 72);
LEAKWRAP_PIN(AllocatorStatistics, arenas, 80);
LEAKWRAP_PIN(AllocatorStatistics, arenas_total, 84);
LEAKWRAP_PIN(AllocatorStatistics, arena, 88);
LEAKWRAP_PIN(BlockTotals, allocs, 0);
LEAKWRAP_PIN(BlockTotals, frees, 8);
LEAKWRAP_PIN(BlockTotals, alloc_bytes, 16);
LEAKWRAP_PIN(BlockTotals, free_bytes, 24);
static_assert(sizeof(BlockTotals) == 32);
LEAKWRAP_PIN(AllocatorStatistics, counted, 2136);
static_assert(sizeof(AllocatorStatistics) == 2176);
// The writer puts them in the header's page, after the header: no page more to back.
static_assert(sizeof(Header) + sizeof(AllocatorStatistics) <= 4096);
LEAKWRAP_PIN(ModuleRecord, state, 0);
LEAKWRAP_PIN(ModuleRecord, load_generation, 4);
LEAKWRAP_PIN(ModuleRecord, unload_generation, 8);
LEAKWRAP_PIN(ModuleRecord, build_id_length, 12);
LEAKWRAP_PIN(ModuleRecord, path, 16);
LEAKWRAP_PIN(ModuleRecord, load_bias, 24);
LEAKWRAP_PIN(ModuleRecord, start, 32);
LEAKWRAP_PIN(ModuleRecord, end, 40);
LEAKWRAP_PIN(ModuleRecord, build_id, 48);
static_assert(sizeof(ModuleRecord) == 128);
#undef LEAKWRAP_PIN

static_assert(std::is_standard_layout_v<Header> && std::is_trivially_copyable_v<Header>);
static_assert(std::is_standard_layout_v<StackRecord> && std::is_trivially_copyable_v<StackRecord>);
static_assert(std::is_standard_layout_v<RubyFrameRecord> && std::is_trivially_copyable_v<RubyFrameRecord>);
static_assert(std::is_standard_layout_v<SiteRecord> && std::is_trivially_copyable_v<SiteRecord>);
static_assert(std::is_standard_layout_v<ModuleRecord> && std::is_trivially_copyable_v<ModuleRecord>);
static_assert(std::is_standard_layout_v<SiteDelta> && std::is_trivially_copyable_v<SiteDelta>);

}  // namespace leakwrap::layout
