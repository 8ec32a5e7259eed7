#include "site_counters.h"

namespace leakwrap {
namespace {

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

void retarget_site_delta(layout::SiteDelta* delta, uint32_t site) {
    move_to_record(delta);
    std::atomic_ref<uint32_t>(delta->site).store(site, std::memory_order_release);
}

void move_all_site_deltas_to_records(uint64_t sites) {
    for (uint32_t entry = 0; entry < kBinShards * kSiteDeltaSlots; ++entry) {
        layout::SiteDelta* delta = &g_segment.site_deltas[entry];
        if (delta->site != layout::kNoDeltaSite && delta->site >= sites) delta->site = layout::kNoDeltaSite;
        move_to_record(delta);
    }
}

}  // namespace leakwrap
