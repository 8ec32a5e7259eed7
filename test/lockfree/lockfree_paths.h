// What the lock-free path tests share: the call sites they record from, each thread's tally of
// what it recorded (the ground truth), the same counts read back from the segment, and the
// fixture that starts and stops a recording.
#pragma once

#include "recording.h"
#include "segment_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <ostream>
#include <utility>

// The call sites. Each is a function of its own that is never inlined, and the asm keeps its
// call to record_allocation a call (not a jump), so the site's innermost frame is in it; the rest
// of the stack is the thread's, the same in every worker. A named namespace: the executable
// exports them (ENABLE_EXPORTS), so dladdr() can check that a site names the right function.
// Each body stores a constant of its own, so that identical code folding cannot merge them.
namespace lockfree_sites {

extern std::atomic<uint32_t> g_sink;

template <int Id>
__attribute__((noinline)) uint32_t call_site(uint64_t size) {
    g_sink.store(Id, std::memory_order_relaxed);
    uint32_t site = leakwrap::recording::record_allocation(size);
    asm volatile("" : "+r"(site));
    return site;
}

// One call site reached from two callers whose frames are alike (same size, same caller): the
// call of record_allocation has the same return address and stack pointer from both, and only a
// return address further out tells them apart.
uint32_t shared_leaf(uint64_t size);

template <int Id>
__attribute__((noinline)) uint32_t caller_of_leaf(uint64_t size) {
    g_sink.store(2000 + Id, std::memory_order_relaxed);
    uint32_t site = shared_leaf(size);
    asm volatile("" : "+r"(site));
    return site;
}

}  // namespace lockfree_sites

namespace lockfree {

namespace layout = leakwrap::layout;
namespace recording = leakwrap::recording;

using SiteFunction = uint32_t (*)(uint64_t);

inline constexpr int kThreads = 8;

// Every worker allocates from all shared sites and from its own private ones, every round.
struct SiteSpec {
    SiteFunction function;
    uint64_t size;
};
// The last shared site allocates from the first one's function, in another size class: one
// stack with two sites, which all threads race to add to its chain.
inline constexpr int kSharedSites = 4;
inline constexpr int kPrivateSitesPerThread = 2;
inline constexpr int kLogicalSites = kSharedSites + kThreads * kPrivateSitesPerThread;

template <std::size_t... Id>
constexpr std::array<SiteFunction, sizeof...(Id)> site_functions(std::index_sequence<Id...>) {
    return {&lockfree_sites::call_site<static_cast<int>(Id)>...};
}
inline constexpr auto kSiteFunctions = site_functions(std::make_index_sequence<kLogicalSites>());

// Logical site 0..kSharedSites-1: shared; then kPrivateSitesPerThread per thread.
SiteSpec site_spec(int logical);

struct Counts {
    uint64_t allocs = 0, frees = 0, alloc_bytes = 0, free_bytes = 0;
    bool operator==(const Counts&) const = default;
    Counts& operator+=(const Counts& o) {
        allocs += o.allocs;
        frees += o.frees;
        alloc_bytes += o.alloc_bytes;
        free_bytes += o.free_bytes;
        return *this;
    }
    bool fits_in(const Counts& o) const {
        return allocs <= o.allocs && frees <= o.frees && alloc_bytes <= o.alloc_bytes && free_bytes <= o.free_bytes;
    }
    Counts max_with(const Counts& o) const {
        return {std::max(allocs, o.allocs), std::max(frees, o.frees), std::max(alloc_bytes, o.alloc_bytes),
                std::max(free_bytes, o.free_bytes)};
    }
};

std::ostream& operator<<(std::ostream& out, const Counts& c);

Counts counts_of(const leakwrap::Counters& c);

// What one thread recorded, by site index and by size class.
struct Tally {
    std::map<uint32_t, Counts> sites;
    std::map<uint32_t, Counts> classes;

    void allocated(uint32_t site, uint64_t size) {
        Counts& s = sites[site];
        Counts& c = classes[layout::size_class_of(size)];
        ++s.allocs, ++c.allocs;
        s.alloc_bytes += size, c.alloc_bytes += size;
    }
    void freed(uint32_t site, uint64_t size) {
        Counts& s = sites[site];
        Counts& c = classes[layout::size_class_of(size)];
        ++s.frees, ++c.frees;
        s.free_bytes += size, c.free_bytes += size;
    }
    Tally& operator+=(const Tally& other) {
        for (const auto& [site, counts] : other.sites) sites[site] += counts;
        for (const auto& [size_class, counts] : other.classes) classes[size_class] += counts;
        return *this;
    }
};

struct Block {
    uint32_t site;
    uint64_t size;
};

Block allocate(SiteFunction function, uint64_t size, Tally& tally);
void release(const Block& block, Tally& tally);

std::map<uint32_t, Counts> site_counts(const leakwrap::Snapshot& snapshot);
std::map<uint32_t, Counts> bin_counts(const leakwrap::Snapshot& snapshot);
// Drops all-zero entries, so that maps compare by what was counted.
std::map<uint32_t, Counts> nonzero(std::map<uint32_t, Counts> counts);

bool names_function(uint64_t return_address, SiteFunction function);

class LockFreePaths : public ::testing::Test {
protected:
    void start(recording::Options options = {}) {
        ASSERT_TRUE(recording::start(options)) << "cannot create the segment in /dev/shm";
    }
    void TearDown() override { recording::stop(); }

    leakwrap::Snapshot final_snapshot() { return leakwrap::read_segment_file(recording::segment_path()); }
};

}  // namespace lockfree
