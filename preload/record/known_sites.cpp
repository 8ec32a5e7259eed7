#include "known_sites.h"

#include <atomic>
#include <cstddef>

#include "leakwrap/segment_layout.h"
#include "os.h"
#include "private_memory.h"

namespace leakwrap {
namespace {

// 32K entries, 256 KiB reserved: a Rails app's requests meet a few thousand stacks, its boot
// some 60,000, most of them once.
constexpr uint32_t kSlotsLog2 = 15;
constexpr uint32_t kSlots = 1u << kSlotsLog2;

// An entry: the key's bits from kSiteBits up, and the site in the bits below. The slot is
// chosen by the key's low kSlotsLog2 bits, which the entry does not keep: every bit it keeps
// tells keys of one slot apart. 0 is empty; a key whose kept bits are all zero is never found
// (a miss, never a wrong site).
constexpr uint32_t kSiteBits = 26;
constexpr uint64_t kSiteMask = (uint64_t{1} << kSiteBits) - 1;
static_assert(layout::kMaxSiteCapacity - 1 <= kSiteMask, "every site fits an entry");
static_assert(kSlotsLog2 <= kSiteBits, "the bits choosing the slot are not among those kept");

constinit std::atomic<uint64_t>* g_entries = nullptr;

// The memo's 4 KiB pages written so far, a bit each: what it adds to the RSS, counted as it
// grows. A small program writes a few of its 64 pages; counting it whole would say more than
// the program's whole anonymous memory.
constexpr std::size_t kPageBytes = 4096;
static_assert(sizeof(std::atomic<uint64_t>) * kSlots == 64 * kPageBytes, "one bit per page");
constinit std::atomic<uint64_t> g_pages_written{0};

void count_page_of(const std::atomic<uint64_t>& entry) {
    const auto offset = static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&entry) -
                                                 reinterpret_cast<const std::byte*>(g_entries));
    const uint64_t bit = uint64_t{1} << (offset / kPageBytes);
    if ((g_pages_written.load(std::memory_order_relaxed) & bit) != 0) return;
    if ((g_pages_written.fetch_or(bit, std::memory_order_relaxed) & bit) == 0) count_private_bytes(kPageBytes);
}

std::atomic<uint64_t>& entry_for(uint64_t key_hash) { return g_entries[key_hash & (kSlots - 1)]; }

}  // namespace

bool init_known_sites() {
    void* memory = os::reserve_private(sizeof(std::atomic<uint64_t>) * kSlots);
    g_entries = static_cast<std::atomic<uint64_t>*>(memory);
    g_pages_written.store(0, std::memory_order_relaxed);  // a new reservation, none of it written
    return g_entries != nullptr;
}

// Acquire and release, free on x86_64: a thread that finds a site another thread remembered
// also sees that site's record as it was published.
uint32_t known_site(uint64_t key_hash) {
    const uint64_t entry = entry_for(key_hash).load(std::memory_order_acquire);
    if (entry == 0 || (entry & ~kSiteMask) != (key_hash & ~kSiteMask)) return kUnknownSite;
    return static_cast<uint32_t>(entry & kSiteMask);
}

void remember_known_site(uint64_t key_hash, uint32_t site) {
    std::atomic<uint64_t>& entry = entry_for(key_hash);
    entry.store((key_hash & ~kSiteMask) | site, std::memory_order_release);
    count_page_of(entry);
}

}  // namespace leakwrap
