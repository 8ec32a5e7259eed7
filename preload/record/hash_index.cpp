#include "hash_index.h"

#include "private_memory.h"

namespace leakwrap {
namespace {

cds_lfht* new_table(unsigned long buckets) {
    // Fixed size (no CDS_LFHT_AUTO_RESIZE): see hash_index.h.
    cds_lfht* table = cds_lfht_new(buckets, buckets, buckets, 0, nullptr);
    // Its buckets, one node each, all written now.
    if (table != nullptr) count_private_bytes(static_cast<int64_t>(buckets * sizeof(cds_lfht_node)));
    return table;
}

}  // namespace

bool HashIndex::init(unsigned long first_buckets) {
    first_buckets_ = first_buckets;
    cds_lfht* first = new_table(first_buckets);
    if (first == nullptr) return false;
    for (auto& table : tables_) table.store(nullptr, std::memory_order_relaxed);
    entries_in_newest_.store(0, std::memory_order_relaxed);
    tables_[0].store(first, std::memory_order_relaxed);
    table_count_.store(1, std::memory_order_release);
    return true;
}

cds_lfht_node* HashIndex::find(uint64_t hash, cds_lfht_match_fct match, const void* key) const {
    for (uint32_t t = table_count_.load(std::memory_order_acquire); t-- > 0;) {
        cds_lfht_iter iter;
        cds_lfht_lookup(tables_[t].load(std::memory_order_relaxed), hash, match, key, &iter);
        if (cds_lfht_node* node = cds_lfht_iter_get_node(&iter)) return node;
    }
    return nullptr;
}

cds_lfht_node* HashIndex::add(uint64_t hash, cds_lfht_match_fct match, const void* key, cds_lfht_node* node) {
    uint32_t newest = table_count_.load(std::memory_order_acquire) - 1;
    cds_lfht_node* holder =
        cds_lfht_add_unique(tables_[newest].load(std::memory_order_relaxed), hash, match, key, node);
    if (holder == node) add_table_if_full(newest);
    return holder;
}

// The thread whose entry fills the newest table adds the next; others keep adding to the full
// one meanwhile (a little longer chains, briefly). Never waits.
void HashIndex::add_table_if_full(uint32_t newest) {
    uint64_t entries = entries_in_newest_.fetch_add(1, std::memory_order_relaxed) + 1;
    unsigned long buckets = first_buckets_ << (kGrowthLog2 * newest);
    if (entries < kEntriesPerBucket * buckets || newest + 1 >= kMaxTables) return;
    if (adding_table_.test_and_set(std::memory_order_acquire)) return;
    if (table_count_.load(std::memory_order_relaxed) == newest + 1) {
        if (cds_lfht* next = new_table(buckets << kGrowthLog2)) {
            tables_[newest + 1].store(next, std::memory_order_relaxed);
            entries_in_newest_.store(0, std::memory_order_relaxed);
            table_count_.store(newest + 2, std::memory_order_release);
        }
    }
    adding_table_.clear(std::memory_order_release);
}

}  // namespace leakwrap
