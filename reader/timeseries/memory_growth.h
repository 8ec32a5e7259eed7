// Whether a series' RSS grew beyond what leakwrap tracks: memory that no call site holds
// (fragmentation, an allocator keeping freed pages, memory outside malloc), which `suspects`
// reports next to the sites, with the size classes that churned most as the likely fragmenters.
#pragma once

#include "memory_parts.h"
#include "series.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leakwrap {

// RSS growth beyond the tracked live bytes' growth that counts as memory outside the tracked
// heap: at least this much, and at least half of the RSS growth.
inline constexpr double kMinUntrackedGrowth = 1024 * 1024;
inline constexpr double kMinUntrackedShare = 0.5;
inline constexpr std::size_t kChurningClassesShown = 3;

struct ChurningClass {
    uint32_t size_class = 0;
    uint64_t allocs = 0;  // during the series
    uint64_t frees = 0;
};

// The allocator's own count from the series' first reading to its last sample's
// (allocator_account.h).
struct ArenaGrowth {
    uint32_t index = 0;  // malloc_info()'s: 0 is the main arena
    double free = 0;
    double returnable = 0;
};
inline constexpr std::size_t kGrowingArenasShown = 3;
struct AllocatorGrowth {
    std::string allocator;  // "glibc" or "jemalloc"
    int64_t first_taken_since_start_ns = 0, last_taken_since_start_ns = 0;
    double in_use = 0, free = 0, returnable = 0;
    // The arenas whose free memory grew most (glibc; an arena new since counts from nothing), at
    // most kGrowingArenasShown, and how many more grew.
    std::vector<ArenaGrowth> arenas;
    std::size_t more_arenas_grew = 0;
};

struct MemoryGrowth {
    // From the first to the last sample. The RSS and PSS growths leave out leakwrap's own memory:
    // its segment and its private tables.
    double rss = 0;
    double rss_anon = 0;
    std::optional<double> pss;  // none when a sample has no PSS (a series of an older watch)
    double segment = 0;
    double leakwrap_private = 0;  // 0 in a series of a preload that does not count them
    double tracked_live = 0;
    // A process tree's (watch --children) growth is its PSS's: its processes' RSS count a page
    // they share once in each, so a worker unsharing a page it got from the master (copy on
    // write) grows the tree by a page and their RSS not at all. A single process's is its RSS's,
    // which the pages others map or unmap do not move.
    bool by_pss = false;
    bool untracked = false;               // RSS (PSS) grew well beyond what the tracked live bytes explain
    std::vector<ChurningClass> churning;  // most blocks freed first; only when untracked
    // RSS explained (memory_parts.h) at the first and the last sample: each part's growth, in
    // named_parts() order, and the findings at the last; empty when a sample has no mappings
    // (a series of an older watch, or of a process tree).
    std::vector<std::pair<std::string, double>> part_growth;
    std::vector<std::string> last_findings;
    // None unless the series has two readings of the same allocator, the last sample's one.
    std::optional<AllocatorGrowth> allocator;
};

// RSS explained for one sample (memory_parts.h); none for a process tree's, or one without the
// process's mappings (a series of an older watch).
std::optional<MemoryParts> explain_sample_memory(const Sample& sample);

// None when the first or last sample has no RSS (a series of an older watch).
std::optional<MemoryGrowth> memory_growth(const std::vector<Sample>& series);

}  // namespace leakwrap
