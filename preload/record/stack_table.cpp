#include "stack_table.h"

#include <atomic>
#include <cstring>

#include "debug_check.h"
#include "guard.h"
#include "hash_index.h"
#include "modules.h"
#include "os.h"
#include "private_memory.h"
#include "segment.h"

namespace leakwrap {
namespace {

struct StackNode {
    cds_lfht_node node;
    uint32_t reference;
    uint32_t first_site;  // see FoundStack; in what would be the node's padding
};
static_assert(sizeof(StackNode) == 24);

constinit HashIndex g_index;
constinit StackNode* g_nodes = nullptr;
constinit uint32_t g_node_capacity = 0;
constinit std::atomic<uint32_t> g_nodes_used{0};
constinit std::atomic<uint64_t> g_nodes_counted{0};  // bytes of g_nodes in private_memory's count

// The reference is stored with release once the record is written, so whoever finds the node
// through the index also sees the record (see site_table.cpp's index_of).
StackNode* stack_node_of(cds_lfht_node* node) { return caa_container_of(node, StackNode, node); }

uint32_t reference_of(cds_lfht_node* node) {
    return std::atomic_ref<uint32_t>(stack_node_of(node)->reference).load(std::memory_order_acquire);
}

FoundStack found(cds_lfht_node* node, bool added) {
    return FoundStack{reference_of(node), &stack_node_of(node)->first_site, added};
}

constexpr FoundStack kNotFound{layout::kNoStack, nullptr, false};

int matches_key(cds_lfht_node* node, const void* key_pointer) {
    const auto* key = static_cast<const StackKey*>(key_pointer);
    layout::StackRecord* record = stack_record(reference_of(node));
    return record->native_depth == key->native_depth && record->ruby == key->ruby && record->flags == key->flags &&
           std::memcmp(stack_frames(record), key->frames, sizeof(uint64_t) * key->native_depth) == 0;
}

}  // namespace

uint64_t hash_stack_key(const StackKey& key) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (uint64_t{key.native_depth} << 32) ^ key.ruby ^ (uint64_t{key.flags} << 48);
    auto mix = [&h](uint64_t word) {
        h ^= word;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    };
    for (uint32_t i = 0; i < key.native_depth; ++i) mix(key.frames[i]);
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

bool init_stack_table(uint32_t max_stacks) {
    void* nodes = os::reserve_private(sizeof(StackNode) * uint64_t{max_stacks});
    if (nodes == nullptr) return false;
    g_nodes = static_cast<StackNode*>(nodes);
    g_node_capacity = max_stacks;
    g_nodes_used.store(0, std::memory_order_relaxed);
    g_nodes_counted.store(0, std::memory_order_relaxed);  // a new reservation, none of it counted yet
    return g_index.init(kFirstBuckets);
}

bool stack_table_nearly_full() {
    const uint64_t used = std::atomic_ref<uint64_t>(g_segment.header->stacks_used).load(std::memory_order_relaxed);
    return in_reduced_reserve(used, g_segment.stacks_capacity) ||
           in_reduced_reserve(g_nodes_used.load(std::memory_order_relaxed), g_node_capacity);
}

FoundStack find_or_add_stack(const StackKey& key, uint64_t hash, bool may_add) {
    LEAKWRAP_CHECK(inside_leakwrap() && urcu_bp_read_ongoing());
    LEAKWRAP_CHECK(key.native_depth <= g_segment.max_depth && key.ruby_depth <= g_segment.max_ruby_depth);
    LEAKWRAP_CHECK((key.ruby == layout::kNoRubyFrame) == (key.ruby_depth == 0));
    LEAKWRAP_CHECK(key.ruby_depth == 0 || ruby_frame_record(key.ruby)->depth == key.ruby_depth);
    if (cds_lfht_node* node = g_index.find(hash, matches_key, &key)) return found(node, false);
    if (!may_add) return kNotFound;

    uint32_t ordinal = g_nodes_used.fetch_add(1, std::memory_order_relaxed);
    if (ordinal >= g_node_capacity) return kNotFound;
    count_private_use(g_nodes_counted, uint64_t{ordinal + 1} * sizeof(StackNode));
    uint64_t offset = claim_stack_bytes(layout::stack_record_size(key.native_depth));
    if (offset == UINT64_MAX) return kNotFound;
    const auto reference = static_cast<uint32_t>(offset / layout::kStackAlignment);

    layout::StackRecord* record = stack_record(reference);
    record->native_depth = static_cast<uint8_t>(key.native_depth);
    record->ruby_depth = static_cast<uint8_t>(key.ruby_depth);
    record->flags = static_cast<uint16_t>(key.flags);
    record->ruby = key.ruby;
    std::memcpy(stack_frames(record), key.frames, sizeof(uint64_t) * key.native_depth);
    record->module_generation = current_module_generation();
    // Ready before it can be found (rule R5: a site names only ready stacks); a record that
    // loses the race below is then marked abandoned, and no site ever names it.
    std::atomic_ref<uint32_t> state(record->state);
    state.store(layout::kReady, std::memory_order_release);

    StackNode* node = &g_nodes[ordinal];
    std::atomic_ref<uint32_t>(node->reference).store(reference, std::memory_order_release);
    cds_lfht_node* holder = g_index.add(hash, matches_key, &key, &node->node);
    if (holder == &node->node) {
        if (key.flags & layout::kStackReduced)
            std::atomic_ref<uint64_t>(g_segment.header->reduced_stacks).fetch_add(1, std::memory_order_relaxed);
        return found(holder, true);
    }
    state.store(layout::kAbandoned, std::memory_order_release);
    return found(holder, false);
}

}  // namespace leakwrap
