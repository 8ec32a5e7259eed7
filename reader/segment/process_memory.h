// What the kernel says a live process holds in memory, next to what leakwrap tracks: the
// resident set split as /proc/PID/status gives it, and how much of it is leakwrap's own segment.
// Only a live process has one: post mortem there is no RSS, and the reports say so.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace leakwrap {

// A heap of glibc's malloc found among the process's mappings: the main arena's `[heap]` (grown
// with brk), or a heap of a thread arena, an anonymous mapping glibc places on a 64 MiB
// boundary (HEAP_MAX_SIZE on 64-bit), followed by its reserved, inaccessible rest.
struct MallocHeap {
    uint64_t start = 0;
    uint64_t resident = 0;
    bool main = false;  // [heap]
    bool operator==(const MallocHeap&) const = default;
};

// The resident set by kind of mapping (/proc/PID/smaps), for "RSS explained" (memory_parts.h).
struct ResidentMappings {
    std::vector<MallocHeap> heaps;  // in address order
    uint64_t thread_stacks = 0;     // [stack], and anonymous mappings right above a guard page
    uint32_t thread_stack_count = 0;
    uint64_t files = 0;            // file-backed (code, data files) and other shared memory
    uint64_t other_anonymous = 0;  // anonymous, neither heaps nor stacks (mmap'd blocks, ...)
    // The file name of an allocator library mapped in the process (libjemalloc.so.2, say), whose
    // heaps are not glibc's; empty if there is none.
    std::string allocator_library;
    bool operator==(const ResidentMappings&) const = default;
};

struct ProcessMemory {
    uint64_t rss_anon = 0;   // RssAnon: the heap, stacks, anonymous mmaps (malloc's arenas)
    uint64_t rss_file = 0;   // RssFile: mapped files, code
    uint64_t rss_shmem = 0;  // RssShmem: shared memory, leakwrap's segment included
    // The resident pages of the process's mappings of its segment (/proc/PID/smaps), a part of
    // rss_shmem. leakwrap's private memory (its hash indexes, per-thread memos) is anonymous and
    // unnamed, so it is in rss_anon and not counted here.
    uint64_t segment_resident = 0;
    // leakwrap's private tables (its stack index, per-thread memos, ...) as its writer counts them,
    // a part of rss_anon; 0 from a writer that does not count them (layout before 7).
    uint64_t leakwrap_private = 0;
    // The proportional set (Pss summed over /proc/PID/smaps): each resident page divided among
    // the processes that map it. The RSS of puma's master and workers counts a page they share
    // (libruby's code, the heap the workers were forked with) once in each; their PSS add up to
    // what the tree holds.
    uint64_t pss = 0;
    // None where the mappings were not read (a series written before they were kept).
    std::optional<ResidentMappings> mappings;

    uint64_t rss() const { return rss_anon + rss_file + rss_shmem; }
    bool operator==(const ProcessMemory&) const = default;
};

// None if the process is gone or /proc cannot be read. leakwrap_private is the writer's count.
std::optional<ProcessMemory> read_process_memory(pid_t pid, const std::filesystem::path& segment,
                                                 uint64_t leakwrap_private);

// {"rss_bytes", "rss_anon_bytes", "rss_file_bytes", "rss_shmem_bytes",
// "leakwrap_segment_resident_bytes", "leakwrap_private_bytes", "pss_bytes", "mappings"}, or
// null for none; and back (0 for a member an older line lacks, no mappings if it has none).
nlohmann::json process_memory_json(const std::optional<ProcessMemory>& memory);
std::optional<ProcessMemory> process_memory_from_json(const nlohmann::json& object);

}  // namespace leakwrap
