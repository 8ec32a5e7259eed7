#include "site_table.h"

#include <sys/mman.h>
#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include <atomic>
#include <cstring>

#include "diagnostics.h"
#include "call_site_cache.h"
#include "modules.h"
#include "ruby_location.h"
#include "stack_capture.h"

namespace leakwrap {
namespace {

using layout::SiteRecord;

// Hash-table nodes are process-private (they hold pointers) and parallel to the site slots:
// node i belongs to slot i, so inserting never allocates.
struct SiteNode {
    cds_lfht_node node;
    uint32_t index;
};

constinit cds_lfht* g_table = nullptr;
constinit SiteNode* g_nodes = nullptr;
constinit std::atomic<bool> g_table_full_reported{false};
constinit std::atomic<bool> g_shm_full_reported{false};

struct SiteKey {
    const uint64_t* frames;
    uint32_t depth;
    uint32_t size_class;
    RubyLocation ruby;
};

uint64_t hash_key(const SiteKey& key) {
    uint64_t extra = (uint64_t{key.size_class} << 56) ^ (uint64_t{key.ruby.file} << 24) ^ key.ruby.line;
    return hash_stack(key.frames, key.depth) ^ (extra * 0x9E3779B97F4A7C15ull);
}

// The slot of a node found in the table. insert_site stores it with release once the slot's
// record is written, so whoever finds the node through the table also sees the record's key:
// leakwrap's own hand-off (visible to ThreadSanitizer), not only implied by the ordering inside
// liburcu's publication.
uint32_t index_of(cds_lfht_node* node) {
    return std::atomic_ref<uint32_t>(caa_container_of(node, SiteNode, node)->index)
        .load(std::memory_order_acquire);
}

int matches_key(cds_lfht_node* node, const void* key_pointer) {
    const auto* key = static_cast<const SiteKey*>(key_pointer);
    SiteRecord* record = site_record(index_of(node));
    return record->depth == key->depth && record->size_class == key->size_class &&
           record->ruby_file == key->ruby.file && record->ruby_line == key->ruby.line &&
           std::memcmp(site_frames(record), key->frames, sizeof(uint64_t) * key->depth) == 0;
}

enum class Overflow { table_full, shm_full };

// Counts a new site that found no room in the overflow site of its size class, and says why
// once per reason: raising LEAKWRAP_MAX_SITES does not help when /dev/shm itself is full.
uint32_t overflow(layout::Header* h, uint32_t size_class, Overflow reason) {
    std::atomic_ref<uint64_t>(h->lost_sites).fetch_add(1, std::memory_order_relaxed);
    if (reason == Overflow::table_full) {
        if (!g_table_full_reported.exchange(true, std::memory_order_relaxed))
            warn("site table full (%u sites): allocations from further new call sites are counted "
                 "in the overflow site (raise LEAKWRAP_MAX_SITES)",
                 h->site_capacity);
    } else if (!g_shm_full_reported.exchange(true, std::memory_order_relaxed)) {
        warn("/dev/shm is full: allocations from further new call sites are counted in the "
             "overflow site (free space in /dev/shm)");
    }
    return size_class;  // the overflow site of this size class
}

// Called inside an RCU read-side critical section.
uint32_t insert_site(const SiteKey& key, uint64_t hash) {
    layout::Header* h = g_segment.header;
    std::atomic_ref<uint32_t> claimed(h->sites_claimed);
    uint32_t slot = claimed.load(std::memory_order_relaxed);
    do {
        if (slot >= g_segment.site_capacity) return overflow(h, key.size_class, Overflow::table_full);
    } while (!claimed.compare_exchange_weak(slot, slot + 1, std::memory_order_relaxed));
    uint64_t offset = h->sites_offset + uint64_t{slot} * g_segment.site_record_size;
    if (!reserve_segment_bytes(offset, g_segment.site_record_size))
        return overflow(h, key.size_class, Overflow::shm_full);

    SiteRecord* record = site_record(slot);
    record->depth = key.depth;
    record->size_class = key.size_class;
    record->ruby_file = key.ruby.file;
    record->ruby_line = key.ruby.line;
    record->stack_hash = hash;
    std::memcpy(site_frames(record), key.frames, sizeof(uint64_t) * key.depth);
    record->module_generation = current_module_generation();

    SiteNode* node = &g_nodes[slot];
    std::atomic_ref<uint32_t>(node->index).store(slot, std::memory_order_release);
    cds_lfht_node* winner = cds_lfht_add_unique(g_table, hash, matches_key, &key, &node->node);
    std::atomic_ref<uint32_t> state(record->state);
    if (winner != &node->node) {
        // Another thread inserted the same stack first: use its site, retire this slot.
        state.store(layout::kAbandoned, std::memory_order_release);
        return index_of(winner);
    }
    state.store(layout::kReady, std::memory_order_release);
    return slot;
}

}  // namespace

bool init_site_table() {
    uint32_t capacity = g_segment.site_capacity;
    void* nodes = mmap(nullptr, sizeof(SiteNode) * capacity, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (nodes == MAP_FAILED) return false;
    g_nodes = static_cast<SiteNode*>(nodes);
    // Fixed size, no auto-resize: resizing needs call_rcu worker threads, which do not
    // survive fork() and would run leakwrap code outside any allocation.
    // A quarter bucket per slot: chains stay short (the lfht compares stored hashes before it
    // touches a record) and the buckets of the default table cost 1 MiB.
    unsigned long buckets = 256;
    while (buckets < capacity / 4) buckets <<= 1;
    g_table = cds_lfht_new(buckets, buckets, buckets, 0, nullptr);
    return g_table != nullptr;
}

uint32_t site_for_allocation(uint64_t size, const CallerContext& caller) {
    uint32_t size_class = layout::size_class_of(size);
    RubyLocation ruby = current_ruby_location();
    CacheLookup cached = look_up_site(caller, size_class, ruby);
    if (cached.site != kNoCachedSite) return cached.site;

    CapturedStack stack;
    if (cached.fill)
        capture_stack_with_slots(caller, g_segment.max_depth, &stack);
    else
        capture_stack(g_segment.max_depth, &stack);
    SiteKey key{stack.frames, stack.depth, size_class, ruby};
    uint64_t hash = hash_key(key);
    urcu_bp_read_lock();
    cds_lfht_iter iter;
    cds_lfht_lookup(g_table, hash, matches_key, &key, &iter);
    cds_lfht_node* found = cds_lfht_iter_get_node(&iter);
    uint32_t site = found != nullptr ? index_of(found) : insert_site(key, hash);
    urcu_bp_read_unlock();
    remember_site(caller, size_class, ruby, stack, site);
    return site;
}

}  // namespace leakwrap
