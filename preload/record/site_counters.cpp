#include "site_counters.h"

namespace leakwrap {
namespace {

// Sequentially consistent, Dekker-style: a mover announces itself before it looks at the hold,
// the forking thread sets the hold before it looks at the movers, so one of them sees the other.
// The hold counts the forking threads that hold it: forks from several threads overlap, and one
// releasing must not let moves run under another's copy.
constinit std::atomic<uint32_t> g_moves_held{0};
constinit std::atomic<uint32_t> g_moves_running{0};
constexpr uint32_t kMaxWaitForMoves = 1u << 20;  // spins; a move is a few atomic adds

void add_if_any(uint64_t& counter, uint64_t amount) {
    if (amount != 0) std::atomic_ref<uint64_t>(counter).fetch_add(amount, std::memory_order_release);
}

// The entry is marked empty before its counts reach the record, so that a reader copying in
// between sees them in neither place (briefly too few) rather than in both (too many).
void move_to_record(layout::SiteDelta* delta) {
    std::atomic_ref<uint32_t> owner(delta->site);
    uint32_t site = owner.load(std::memory_order_relaxed);
    if (site == layout::kNoDeltaSite) return;
    owner.store(layout::kNoDeltaSite, std::memory_order_release);
    layout::SiteRecord* record = site_record(site);
    add_if_any(record->alloc_bytes, delta->alloc_bytes);
    add_if_any(record->allocs, delta->allocs);
    add_if_any(record->free_bytes, delta->free_bytes);
    add_if_any(record->frees, delta->frees);
    for (uint64_t* counter : {&delta->allocs, &delta->frees, &delta->alloc_bytes, &delta->free_bytes})
        std::atomic_ref<uint64_t>(*counter).store(0, std::memory_order_relaxed);
}

}  // namespace

bool retarget_site_delta(layout::SiteDelta* delta, uint32_t site) {
    g_moves_running.fetch_add(1);
    bool held = g_moves_held.load() != 0;
    if (!held) {
        move_to_record(delta);
        std::atomic_ref<uint32_t>(delta->site).store(site, std::memory_order_release);
        // Only the owner writes it: no locked add needed.
        std::atomic_ref<uint32_t> moves(delta->moves);
        moves.store(moves.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // R10
    }
    g_moves_running.fetch_sub(1, std::memory_order_release);
    return !held;
}

void hold_site_delta_moves() {
    g_moves_held.fetch_add(1);
    for (uint32_t spins = 0; g_moves_running.load() != 0 && spins < kMaxWaitForMoves; ++spins) {
    }
}

void release_site_delta_moves() { g_moves_held.fetch_sub(1, std::memory_order_release); }

void move_all_site_deltas_to_records(uint64_t sites) {
    // The parent's movers are not here, nor are the other threads whose forks held moves.
    g_moves_running.store(0, std::memory_order_relaxed);
    g_moves_held.store(0, std::memory_order_relaxed);
    for_each_bin_shard_in_use([sites](uint32_t shard) {
        for (uint32_t slot = 0; slot < kSiteDeltaSlots; ++slot) {
            layout::SiteDelta* delta = &g_segment.site_deltas[shard * kSiteDeltaSlots + slot];
            if (delta->site != layout::kNoDeltaSite && delta->site >= sites) delta->site = layout::kNoDeltaSite;
            move_to_record(delta);
        }
    });
}

}  // namespace leakwrap
