#include "aligned_blocks.h"

#include <atomic>

#include "block_header.h"
#include "leakwrap/segment_layout.h"
#include "os.h"
#include "private_memory.h"

namespace leakwrap {
namespace {

constexpr uint32_t kEntriesLog2 = 16;
constexpr uint32_t kEntries = 1u << kEntriesLog2;
constexpr uint32_t kMaxLive = kEntries / 4 * 3;
constexpr uint32_t kMaxProbes = 64;
constexpr uint64_t kPageBytes = 4096;
constexpr uint32_t kEntriesPerPage = kPageBytes / 16;
constexpr uint32_t kPages = kEntries / kEntriesPerPage;

// Entry::address values that are no block's (blocks here are page-aligned).
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = 1;

// Entry::size_and_site: the requested size above, the site in the low bits (sites are below
// kMaxSiteCapacity; kUnsampledSite is stored as kMaxSiteCapacity).
constexpr unsigned kSiteBits = 27;
static_assert(layout::kMaxSiteCapacity < (1u << kSiteBits));
static_assert(kMaxHeaderlessSize < (uint64_t{1} << (64 - kSiteBits)));

struct Entry {
    std::atomic<uint64_t> address;
    // Written by the thread that claimed the entry, read by the one that frees the block, which
    // the program ordered after the allocation returned.
    std::atomic<uint64_t> size_and_site;
};
static_assert(sizeof(Entry) == 16);

constinit std::atomic<Entry*> g_entries{nullptr};
constinit std::atomic<uint32_t> g_live{0};
// The table's pages written so far, a bit each: what it adds to the RSS, counted as it grows.
constinit std::atomic<uint64_t> g_pages_written[kPages / 64]{};

// The table, reserved by the first thread that needs it; null if there is no memory.
Entry* entries() {
    Entry* table = g_entries.load(std::memory_order_acquire);
    if (table != nullptr) return table;
    auto* fresh = static_cast<Entry*>(os::reserve_private(sizeof(Entry) * kEntries));
    if (fresh == nullptr) return nullptr;
    if (g_entries.compare_exchange_strong(table, fresh, std::memory_order_acq_rel)) return fresh;
    os::unmap(fresh, sizeof(Entry) * kEntries);  // another thread's came first
    return table;
}

void count_page_of(uint32_t index) {
    const uint32_t page = index / kEntriesPerPage;
    std::atomic<uint64_t>& word = g_pages_written[page / 64];
    const uint64_t bit = uint64_t{1} << (page % 64);
    if ((word.load(std::memory_order_relaxed) & bit) == 0 && (word.fetch_or(bit, std::memory_order_relaxed) & bit) == 0)
        count_private_bytes(kPageBytes);
}

// A block's page number picks its entry: blocks next to each other in memory take entries next
// to each other, so that a program's blocks write few of the table's pages; the bits above fold
// in, so that regions far apart do not all start at the same entries.
uint32_t home(uint64_t address) {
    const uint64_t page = address >> 12;
    return static_cast<uint32_t>((page ^ (page >> kEntriesLog2)) & (kEntries - 1));
}

uint64_t pack(uint64_t size, uint32_t site) {
    return (size << kSiteBits) | (site == kUnsampledSite ? layout::kMaxSiteCapacity : site);
}

}  // namespace

// I7: called after the real allocator returned the block, before it is handed out.
bool remember_headerless_block(void* block, uint64_t size, uint32_t site) {
    const auto address = reinterpret_cast<uint64_t>(block);
    if (size > kMaxHeaderlessSize || !may_be_headerless(block) || address == kEmpty) return false;
    Entry* table = entries();
    if (table == nullptr) return false;
    if (g_live.fetch_add(1, std::memory_order_relaxed) >= kMaxLive) {
        g_live.fetch_sub(1, std::memory_order_relaxed);
        return false;
    }
    for (uint32_t probe = 0, index = home(address); probe < kMaxProbes; ++probe, ++index) {
        Entry& entry = table[index & (kEntries - 1)];
        uint64_t held = entry.address.load(std::memory_order_relaxed);
        while (held == kEmpty || held == kTombstone) {
            if (entry.address.compare_exchange_weak(held, address, std::memory_order_relaxed)) {
                entry.size_and_site.store(pack(size, site), std::memory_order_relaxed);
                count_page_of(index & (kEntries - 1));
                return true;
            }
        }
    }
    g_live.fetch_sub(1, std::memory_order_relaxed);
    return false;
}

bool find_headerless_block(void* block, bool forget, uint64_t* size, uint32_t* site) {
    Entry* table = g_entries.load(std::memory_order_acquire);
    const auto address = reinterpret_cast<uint64_t>(block);
    if (table == nullptr || !may_be_headerless(block) || address == kEmpty) return false;
    for (uint32_t probe = 0, index = home(address); probe < kMaxProbes; ++probe, ++index) {
        Entry& entry = table[index & (kEntries - 1)];
        const uint64_t held = entry.address.load(std::memory_order_relaxed);
        if (held == kEmpty) return false;
        if (held != address) continue;
        const uint64_t packed = entry.size_and_site.load(std::memory_order_relaxed);
        *size = packed >> kSiteBits;
        const auto stored_site = static_cast<uint32_t>(packed & ((uint64_t{1} << kSiteBits) - 1));
        *site = stored_site == layout::kMaxSiteCapacity ? kUnsampledSite : stored_site;
        if (forget) {
            entry.address.store(kTombstone, std::memory_order_relaxed);
            g_live.fetch_sub(1, std::memory_order_relaxed);
        }
        return true;
    }
    return false;
}

}  // namespace leakwrap
