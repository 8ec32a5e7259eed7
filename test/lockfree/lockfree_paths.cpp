#include "lockfree_paths.h"

#include <dlfcn.h>

namespace lockfree_sites {

std::atomic<uint32_t> g_sink{0};

__attribute__((noinline)) uint32_t shared_leaf(uint64_t size) {
    g_sink.store(1000, std::memory_order_relaxed);
    uint32_t site = leakwrap::recording::record_allocation(size);
    asm volatile("" : "+r"(site));
    return site;
}

}  // namespace lockfree_sites

namespace lockfree {

SiteSpec site_spec(int logical) {
    static constexpr uint64_t kSharedSizes[kSharedSites] = {24, 200, 3000, 500};
    if (logical == kSharedSites - 1) return {kSiteFunctions[0], kSharedSizes[logical]};
    if (logical < kSharedSites) return {kSiteFunctions[logical], kSharedSizes[logical]};
    int thread = (logical - kSharedSites) / kPrivateSitesPerThread;
    int which = (logical - kSharedSites) % kPrivateSitesPerThread;
    uint64_t size = which == 0 ? 40 + 8 * thread : 1000 + 100 * thread;
    return {kSiteFunctions[logical], size};
}

std::ostream& operator<<(std::ostream& out, const Counts& c) {
    return out << "{allocs " << c.allocs << ", frees " << c.frees << ", alloc_bytes " << c.alloc_bytes
               << ", free_bytes " << c.free_bytes << "}";
}

Counts counts_of(const leakwrap::Counters& c) { return {c.allocs, c.frees, c.alloc_bytes, c.free_bytes}; }

Block allocate(SiteFunction function, uint64_t size, Tally& tally) {
    uint32_t site = function(size);
    tally.allocated(site, size);
    return {site, size};
}

void release(const Block& block, Tally& tally) {
    recording::record_free(block.site, block.size);
    tally.freed(block.site, block.size);
}

std::map<uint32_t, Counts> site_counts(const leakwrap::Snapshot& snapshot) {
    std::map<uint32_t, Counts> counts;
    for (const auto& site : snapshot.sites) counts[site.id] = counts_of(site.counters());
    return counts;
}

std::map<uint32_t, Counts> bin_counts(const leakwrap::Snapshot& snapshot) {
    std::map<uint32_t, Counts> counts;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class)
        counts[size_class] = counts_of(snapshot.bins[size_class]);
    return counts;
}

std::map<uint32_t, Counts> nonzero(std::map<uint32_t, Counts> counts) {
    std::erase_if(counts, [](const auto& entry) { return entry.second == Counts{}; });
    return counts;
}

bool names_function(uint64_t return_address, SiteFunction function) {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(return_address), &info) != 0 &&
           info.dli_saddr == reinterpret_cast<void*>(function);
}

}  // namespace lockfree
