#include "site_table.h"

#include <urcu-bp.h>

#include <algorithm>
#include <atomic>

#include "debug_check.h"
#include "diagnostics.h"
#include "guard.h"
#include "os.h"
#include "private_memory.h"
#include "ruby_frame_tree.h"
#include "stack_table.h"

namespace leakwrap {
namespace {

using layout::SiteRecord;

// The sites of one stack (one per size class and birth cell it allocated in) form a chain: the stack's node holds
// the first (FoundStack::first_site), and this process-private array, parallel to the site
// slots, the next of each. Sites are only ever added, at the head, so a chain once read stays
// valid. 0 ends a chain: site 0 is an overflow site, which is never chained.
constinit uint32_t* g_next_site = nullptr;
constinit std::atomic<uint64_t> g_next_site_counted{0};  // bytes of it in private_memory's count
constexpr uint32_t kEndOfChain = 0;
static_assert(layout::is_overflow_site(kEndOfChain));
constinit std::atomic<bool> g_reduced_reported{false};
constinit std::atomic<bool> g_table_full_reported{false};
constinit std::atomic<bool> g_shm_full_reported{false};

constexpr uint32_t kNoSite = UINT32_MAX;

// The site of `kind` in the chain from `first` down to (not including) `stop`. New sites are
// added at the head, so the current birth cell's come first.
uint32_t find_in_chain(uint32_t first, uint32_t stop, SiteKind kind) {
    for (uint32_t site = first; site != stop; site = g_next_site[site]) {
        const SiteRecord* record = site_record(site);
        if (record->size_class == kind.size_class && record->birth_cell == kind.birth_cell) return site;
    }
    return kNoSite;
}

bool site_table_nearly_full() {
    uint32_t claimed = std::atomic_ref<uint32_t>(g_segment.header->sites_claimed).load(std::memory_order_relaxed);
    return in_reduced_reserve(claimed, g_segment.site_capacity);
}

// A new stack has no site to find. The head is loaded with acquire and replaced with acq_rel:
// a site's record and its next link are written before the compare-and-swap that publishes it,
// so whoever reaches a site through the chain sees both.
uint32_t find_or_add_site(const FoundStack& stack, SiteKind kind, bool may_add) {
    std::atomic_ref<uint32_t> head(*stack.first_site);
    uint32_t first = head.load(std::memory_order_acquire);
    if (!stack.added) {
        uint32_t site = find_in_chain(first, kEndOfChain, kind);
        if (site != kNoSite) return site;
    }
    if (!may_add) return kNoSite;
    layout::Header* h = g_segment.header;
    std::atomic_ref<uint32_t> claimed(h->sites_claimed);
    uint32_t slot = claimed.load(std::memory_order_relaxed);
    do {
        if (slot >= g_segment.site_capacity) return kNoSite;
    } while (!claimed.compare_exchange_weak(slot, slot + 1, std::memory_order_relaxed));
    if (!reserve_segment_bytes(h->sites_offset + uint64_t{slot} * sizeof(SiteRecord), sizeof(SiteRecord)))
        return kNoSite;
    count_private_use(g_next_site_counted, uint64_t{slot + 1} * sizeof(uint32_t));

    SiteRecord* record = site_record(slot);
    record->stack = stack.reference;
    record->size_class = static_cast<uint8_t>(kind.size_class);
    record->birth_cell = static_cast<uint8_t>(kind.birth_cell);
    // Ready before it can be found; a record that loses the race below is marked abandoned.
    // Its counters stay zero, and the reader leaves out sites that never counted anything.
    std::atomic_ref<uint16_t> state(record->state);
    state.store(layout::kReady, std::memory_order_release);
    for (uint32_t known = first;;) {
        g_next_site[slot] = first;
        if (head.compare_exchange_weak(first, slot, std::memory_order_acq_rel, std::memory_order_acquire)) return slot;
        // Sites added meanwhile: one of them may be this kind's.
        uint32_t site = find_in_chain(first, known, kind);
        if (site != kNoSite) {
            state.store(layout::kAbandoned, std::memory_order_release);
            return site;
        }
        known = first;
    }
}

uint32_t find_or_add(const StackKey& stack_key, uint64_t stack_hash, SiteKind kind, bool may_add) {
    FoundStack stack = find_or_add_stack(stack_key, stack_hash, may_add);
    if (stack.reference == layout::kNoStack) return kNoSite;
    return find_or_add_site(stack, kind, may_add);
}

// Counts an allocation whose stack found no room even reduced, in the overflow site of its size
// class, and says why once per reason: raising LEAKWRAP_MAX_SITES does not help when /dev/shm
// itself is full.
uint32_t overflow(uint32_t size_class) {
    layout::Header* h = g_segment.header;
    std::atomic_ref<uint64_t>(h->lost_sites).fetch_add(1, std::memory_order_relaxed);
    bool tables_full =
        std::atomic_ref<uint32_t>(h->sites_claimed).load(std::memory_order_relaxed) >= g_segment.site_capacity ||
        stack_table_nearly_full();
    if (tables_full) {
        if (!g_table_full_reported.exchange(true, std::memory_order_relaxed))
            warn(
                "site table full (%u sites): allocations from further new call sites are counted "
                "in the overflow sites (raise LEAKWRAP_MAX_SITES)",
                g_segment.site_capacity);
    } else if (!g_shm_full_reported.exchange(true, std::memory_order_relaxed)) {
        warn(
            "/dev/shm is full: allocations from further new call sites are counted in the "
            "overflow sites (free space in /dev/shm)");
    }
    return size_class;  // the overflow site of this size class
}

// Near the capacity, a stack not seen yet is recorded by its innermost frames only (and its
// innermost Ruby frame), sharing a record with every stack that has the same: the tables keep
// room for those, so a leak that starts late is still found by its line and its function.
uint32_t site_when_nearly_full(const StackKey& key, uint64_t hash, SiteKind kind) {
    uint32_t site = find_or_add(key, hash, kind, false);
    if (site != kNoSite) return site;
    if (!g_reduced_reported.exchange(true, std::memory_order_relaxed))
        warn(
            "site table nearly full (%u sites): new call sites are recorded by their innermost "
            "frames only (raise LEAKWRAP_MAX_SITES)",
            g_segment.site_capacity);
    StackKey reduced = key;
    if (reduced.native_depth > layout::kReducedNativeFrames) reduced.native_depth = layout::kReducedNativeFrames;
    static_assert(layout::kReducedRubyFrames == 1);
    if (reduced.ruby_depth > 1) {
        reduced.ruby = innermost_ruby_frame_alone(reduced.ruby);
        reduced.ruby_depth = reduced.ruby == layout::kNoRubyFrame ? 0 : 1;
    }
    reduced.flags = layout::kStackReduced;
    return find_or_add(reduced, hash_stack_key(reduced), kind, true);
}

}  // namespace

uint32_t site_for_stack(const StackKey& key, uint64_t hash, SiteKind kind) {
    urcu_bp_read_lock();
    uint32_t site = site_table_nearly_full() || stack_table_nearly_full() ? site_when_nearly_full(key, hash, kind)
                                                                          : find_or_add(key, hash, kind, true);
    urcu_bp_read_unlock();
    return site != kNoSite ? site : overflow(kind.size_class);
}

bool init_site_table() {
    uint32_t capacity = g_segment.site_capacity;
    void* next_sites = os::reserve_private(sizeof(uint32_t) * uint64_t{capacity});
    if (next_sites == nullptr) return false;
    g_next_site = static_cast<uint32_t*>(next_sites);
    g_next_site_counted.store(0, std::memory_order_relaxed);  // a new reservation, none of it counted yet
    return init_stack_table(capacity) && init_ruby_frame_tree();
}

}  // namespace leakwrap
