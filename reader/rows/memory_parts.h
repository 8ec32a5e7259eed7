// RSS explained: a live process's resident memory in parts that add up to its RSS, each one a
// user can act on, from what the kernel says of its mappings (process_memory.h) and what the
// segment counts, without running anything in the target.
//
// malloc's heaps (glibc's main heap and its thread arenas' heaps, found among the mappings) hold
// the live blocks leakwrap tracks, their per-block overhead, and what is left: free memory the
// allocator keeps resident between and around live blocks. Blocks above kLargeBlock are served
// by mmap outside the heaps, so they are counted apart, within the anonymous mappings.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "allocator_account.h"
#include "process_memory.h"
#include "segment_snapshot.h"

namespace leakwrap {

// glibc's default M_MMAP_THRESHOLD: larger blocks get a mapping of their own (the threshold
// rises with the blocks a program frees, up to 32 MiB, so some larger ones may sit in a heap).
inline constexpr uint64_t kLargeBlock = 128 * 1024;
// What a tracked block in a heap costs beyond its bytes, about: leakwrap's 16-byte header (but on a
// bare block in sampling mode: LiveBySize::blocks_bare),
// glibc's 8-byte chunk header, and the rounding of a chunk to 16 bytes (8 on average).
inline constexpr uint64_t kBlockOverheadEstimate = 32;
inline constexpr uint64_t kHeaderBytes = 16;  // leakwrap's own, before every tracked block

struct MemoryParts {
    uint64_t rss = 0;
    // malloc's heaps, and within them:
    uint64_t heaps = 0;
    // Tracked live blocks of kLargeBlock or less (every live block under another allocator).
    uint64_t live_in_heaps = 0;
    // Their overhead, estimated: kBlockOverheadEstimate a block (leakwrap's 16-byte header alone
    // under another allocator, whose own is not known).
    uint64_t block_overhead = 0;
    uint64_t free_in_heaps = 0;         // the rest: free memory the allocator keeps resident
    std::vector<MallocHeap> heap_list;  // largest first
    // Outside the heaps:
    uint64_t large_blocks = 0;  // tracked live blocks above kLargeBlock (mmap'd), as resident
    uint64_t thread_stacks = 0;
    uint32_t thread_stack_count = 0;
    uint64_t files = 0;            // code and other file-backed or shared mappings
    uint64_t leakwrap = 0;         // its segment and its private tables
    uint64_t other_anonymous = 0;  // anonymous memory outside malloc (a runtime's own heap, mmaps)
    // Another allocator below leakwrap (ResidentMappings::allocator_library): its heaps are not
    // told apart among the mappings. With its own count (jemalloc's), its resident memory is
    // the heaps; without, the tracked live blocks are counted within the anonymous memory and
    // the rest of that is other_anonymous.
    std::string allocator_library;
    // What the allocator said of its own memory (allocator_account.h), if that describes the
    // memory now (current()); else why it was not weighed, empty when there is no count.
    std::optional<AllocatorAccount> allocator;
    std::string allocator_not_weighed;
    // What the parts say, as evidence: where free memory sits and what would give it back.
    std::vector<std::string> findings;
};

// The tracked live blocks by where malloc puts them: those of kLargeBlock or less in its heaps,
// larger ones in mappings of their own.
struct LiveBySize {
    uint64_t blocks = 0;  // all live blocks
    uint64_t small_blocks = 0, small_bytes = 0, large_bytes = 0;
    // Sampling mode's bins (Snapshot::bins_estimated): nearly every block is glibc's own, with no
    // header of leakwrap's, so a block costs kHeaderBytes less than kBlockOverheadEstimate.
    bool blocks_bare = false;
    void add(uint32_t size_class, uint64_t live_blocks, uint64_t live_bytes);
};
LiveBySize live_by_size(const Snapshot& snapshot);

// The parts that add up to RSS, by the names JSON (`memory.parts`) and OpenMetrics
// (`leakwrap_memory_bytes{part=...}`) give them: heap_live, heap_block_overhead, heap_free,
// large_blocks, thread_stacks, files, leakwrap, other_anonymous.
std::vector<std::pair<const char*, uint64_t>> named_parts(const MemoryParts& parts);

// {"rss_bytes", "parts": {name: bytes}, "malloc_heaps": [{"start", "resident_bytes", "main"}],
// "thread_stacks", "findings": [...]}.
nlohmann::json memory_parts_json(const MemoryParts& parts);
// The parts in one line, as the text report and top show them: "malloc's heaps 19.3 MiB (live
// blocks …, their overhead …, free kept by malloc …); large blocks, mmap'd …; …".
std::string memory_parts_summary(const MemoryParts& parts);

// None without the process's mappings (post mortem, a segment read from a file, an old series).
std::optional<MemoryParts> explain_memory(const ProcessMemory& memory, const LiveBySize& live,
                                          const std::optional<AllocatorAccount>& allocator);
// The same for a snapshot; none for a merged process tree (--children), whose RSS counts a page
// its processes share once in each.
inline std::optional<MemoryParts> explain_memory(const Snapshot& snapshot) {
    if (!snapshot.memory || !snapshot.members.empty()) return std::nullopt;
    return explain_memory(*snapshot.memory, live_by_size(snapshot), allocator_account(snapshot));
}

}  // namespace leakwrap
