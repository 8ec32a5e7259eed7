#include "memory_growth.h"

#include <algorithm>
#include <map>

#include "memory_parts.h"

namespace leakwrap {
namespace {

double change(uint64_t first, uint64_t last) { return static_cast<double>(last) - static_cast<double>(first); }

// Blocks allocated and freed during the series, per class: the turnover that leaves holes.
std::vector<ChurningClass> churning_classes(const Sample& first, const Sample& last) {
    std::map<uint32_t, SampleCounters> before;
    for (const SampleBin& bin : first.bins) before[bin.size_class] = bin.counters;
    std::vector<ChurningClass> classes;
    for (const SampleBin& bin : last.bins) {
        const SampleCounters& start = before[bin.size_class];
        const ChurningClass entry{bin.size_class, bin.counters.allocs - std::min(start.allocs, bin.counters.allocs),
                                  bin.counters.frees - std::min(start.frees, bin.counters.frees)};
        if (entry.frees > 0) classes.push_back(entry);
    }
    std::stable_sort(classes.begin(), classes.end(),
                     [](const ChurningClass& a, const ChurningClass& b) { return a.frees > b.frees; });
    if (classes.size() > kChurningClassesShown) classes.resize(kChurningClassesShown);
    return classes;
}

// From the series' first reading (a process read no more before its first allocations has none)
// to the last sample's.
std::optional<AllocatorGrowth> allocator_growth(const std::vector<Sample>& series) {
    const auto first =
        std::find_if(series.begin(), series.end(), [](const Sample& sample) { return sample.allocator.has_value(); });
    const Sample& last = series.back();
    if (first == series.end() || !last.allocator || first->allocator->allocator != last.allocator->allocator ||
        first->allocator->taken_since_start_ns == last.allocator->taken_since_start_ns)
        return std::nullopt;
    const AllocatorAccount& before = *first->allocator;
    const AllocatorAccount& after = *last.allocator;
    AllocatorGrowth growth{.allocator = after.allocator,
                           .first_taken_since_start_ns = before.taken_since_start_ns,
                           .last_taken_since_start_ns = after.taken_since_start_ns,
                           .in_use = change(before.in_use, after.in_use),
                           .free = change(before.free, after.free),
                           .returnable = change(before.returnable, after.returnable),
                           .arenas = {},
                           .more_arenas_grew = 0};
    std::map<uint32_t, const ArenaAccount*> arenas_before;
    for (const ArenaAccount& arena : before.arenas) arenas_before[arena.index] = &arena;
    for (const ArenaAccount& arena : after.arenas) {
        const ArenaAccount* was = arenas_before[arena.index];
        const ArenaGrowth entry{arena.index, change(was ? was->free : 0, arena.free),
                                change(was ? was->returnable : 0, arena.returnable)};
        if (entry.free > 0) growth.arenas.push_back(entry);
    }
    std::stable_sort(growth.arenas.begin(), growth.arenas.end(),
                     [](const ArenaGrowth& a, const ArenaGrowth& b) { return a.free > b.free; });
    if (growth.arenas.size() > kGrowingArenasShown) {
        growth.more_arenas_grew = growth.arenas.size() - kGrowingArenasShown;
        growth.arenas.resize(kGrowingArenasShown);
    }
    return growth;
}

}  // namespace

std::optional<MemoryParts> explain_sample_memory(const Sample& sample) {
    if (!sample.memory || !sample.pids.empty()) return std::nullopt;
    LiveBySize live;
    for (const SampleBin& bin : sample.bins)
        live.add(bin.size_class, bin.counters.live_blocks, bin.counters.live_bytes);
    return explain_memory(*sample.memory, live, sample.allocator);
}

std::optional<MemoryGrowth> memory_growth(const std::vector<Sample>& series) {
    const Sample& first = series.front();
    const Sample& last = series.back();
    if (!first.memory || !last.memory) return std::nullopt;
    MemoryGrowth growth;
    growth.segment = change(first.memory->segment_resident, last.memory->segment_resident);
    growth.leakwrap_private = change(first.memory->leakwrap_private, last.memory->leakwrap_private);
    const double leakwrap_own = growth.segment + growth.leakwrap_private;
    growth.rss = change(first.memory->rss(), last.memory->rss()) - leakwrap_own;
    growth.rss_anon = change(first.memory->rss_anon, last.memory->rss_anon);
    if (first.memory->pss > 0 && last.memory->pss > 0)
        growth.pss = change(first.memory->pss, last.memory->pss) - leakwrap_own;
    growth.by_pss = growth.pss && !first.pids.empty() && !last.pids.empty();
    growth.tracked_live = change(first.totals.live_bytes, last.totals.live_bytes);
    const double grown = growth.by_pss ? *growth.pss : growth.rss;
    const double untracked = grown - std::max(growth.tracked_live, 0.0);
    growth.untracked = untracked >= kMinUntrackedGrowth && untracked >= kMinUntrackedShare * grown;
    if (growth.untracked) growth.churning = churning_classes(first, last);
    const std::optional<MemoryParts> before = explain_sample_memory(first);
    const std::optional<MemoryParts> after = explain_sample_memory(last);
    if (before && after) {
        const auto parts_before = named_parts(*before);
        const auto parts_after = named_parts(*after);
        for (std::size_t i = 0; i < parts_after.size(); ++i)
            growth.part_growth.emplace_back(parts_after[i].first,
                                            change(parts_before[i].second, parts_after[i].second));
        growth.last_findings = after->findings;
    }
    growth.allocator = allocator_growth(series);
    return growth;
}

}  // namespace leakwrap
