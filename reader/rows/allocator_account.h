// What the allocator below leakwrap said of its own memory at its last reading (the segment's
// AllocatorStatistics): how much it keeps free, and how much of that it would hand back to the
// system if asked, by arena for glibc. The writer reads it at most once a second, from a thread
// that allocates, so the figures are as old as the report says.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "segment_snapshot.h"

namespace leakwrap {

struct ArenaAccount {
    uint32_t index = 0;  // malloc_info()'s: 0 is the main arena
    uint64_t system = 0, free = 0, returnable = 0, free_chunks = 0;
};

struct AllocatorAccount {
    std::string allocator;             // "glibc" or "jemalloc"
    int64_t taken_since_start_ns = 0;  // when it was read, in time since the process started
    std::optional<int64_t> age_ns;     // how long ago, for a live process
    uint64_t in_use = 0, free = 0, returnable = 0, system = 0, mmapped = 0, resident = 0, metadata = 0;
    uint32_t arenas_total = 0;
    std::vector<ArenaAccount> arenas;  // in the allocator's order, the main arena first
    // The blocks allocated and freed since the reading began, as the bins count them; none from
    // a writer of a layout before 10.
    std::optional<Counters> since_reading;
};

// None before the writer's first reading, or from a segment of a layout before 9.
std::optional<AllocatorAccount> allocator_account(const Snapshot& snapshot);

// Read recently enough to be weighed against the process's mappings read now: a process that
// allocates is read every second or so.
inline constexpr int64_t kFreshReadingNs = 5'000'000'000;
// An idle process's count is as old as its last allocation, but still describes its heaps if
// little was allocated or freed since: by how much its figures may have moved since, at most
// (each block's bytes, its header and its chunk's, and the chunk's rounding); none if not known.
inline constexpr uint64_t kMostChunkBytesBeyondRequest = 40;
std::optional<uint64_t> bytes_moved_since(const AllocatorAccount& account);
// Whether the count describes the allocator's memory now, within `tolerance` bytes: read
// lately, or with at most that much allocated and freed since.
bool current(const AllocatorAccount& account, uint64_t tolerance);

// "glibc's own count (malloc_info, read 0.4 s ago): in use …, free … in 9 arenas, of which up to
// … in whole pages (what malloc_trim(0) would return); blocks mmap'd …", or jemalloc's.
std::string allocator_account_summary(const AllocatorAccount& account);
// The same in a line that fits a terminal, as `top` shows it: "glibc's count, read 0.4 s ago:
// free … in 9 arenas, up to … of it in whole pages; in use …", or jemalloc's.
std::string allocator_account_brief(const AllocatorAccount& account);
// "#3", or "#0 (main)".
std::string arena_name(uint32_t index);
// The `shown` glibc arenas holding the most free memory, in the allocator's order: "#0 (main)
// 45.1 MiB free, 44.0 MiB in whole pages, of 50.1 MiB; …"; empty for jemalloc.
std::string arenas_summary(const AllocatorAccount& account, std::size_t shown);

// {"allocator", "taken_since_start_seconds", "age_seconds", "in_use_bytes", "free_bytes",
// "returnable_bytes", "system_bytes", "mmapped_bytes", "resident_bytes", "metadata_bytes",
// "arenas_total", "arenas": [{"arena", "system_bytes", "free_bytes", "returnable_bytes",
// "free_chunks"}], "since_reading": {"allocs", "frees", "alloc_bytes", "free_bytes"} or null}.
nlohmann::json allocator_account_json(const AllocatorAccount& account);
// Back from that JSON (a report's totals.allocator, a series line's "allocator"); throws
// nlohmann::json::exception when a member is missing or of the wrong type.
AllocatorAccount allocator_account_from_json(const nlohmann::json& json);

}  // namespace leakwrap
