// An insert-only, lock-free hash index that grows without ever resizing a table: the stack
// table's (sites are found from their stack, site_table.cpp).
//
// liburcu's lfht cannot resize here: resizing runs on call_rcu/workqueue threads, which do not
// survive fork() and would run leakwrap code outside any allocation. So the index is a short
// list of fixed-size lfht tables: once the newest holds four times as many entries as it has
// buckets (chains of four nodes, whose stored hashes are compared before any key is),
// a table four times as large is added and takes the new entries. A lookup searches the tables
// newest first, so chains stay short whatever the program's size, and the memory of the
// buckets follows the number of entries (a small program pays for the first table only).
//
// Two threads inserting one key across a table change may both succeed, leaving the key in two
// tables. That is harmless for leakwrap: two records whose counts the reader adds up, as it
// adds up every record of one stack. So uniqueness is only enforced within a table.
//
// Callers hold the urcu-bp read lock around find() and add(), and the reentrancy guard (a new
// table is allocated with the real allocator).
#pragma once

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include <atomic>
#include <cstdint>

namespace leakwrap {

// Buckets of an index's first table: 64 KiB (lfht buckets are 16 bytes, all written when a
// table is made), room for 16K entries before the next table. A small program pays this much; a
// Ruby interpreter's boot outgrows it. Tables grow 4x, not more, so
// that the buckets stay within 4x of what the entries need.
inline constexpr unsigned long kFirstBuckets = 4096;

class HashIndex {
public:
    // Starts empty with one table of `first_buckets` (a power of two). The tables of an earlier
    // init are left to the process (a forked child re-inits nothing; tests start anew).
    bool init(unsigned long first_buckets);

    cds_lfht_node* find(uint64_t hash, cds_lfht_match_fct match, const void* key) const;

    // Adds `node` to the newest table unless an equal key is there already; returns the node
    // that holds the key in that table (`node` itself if it was added).
    cds_lfht_node* add(uint64_t hash, cds_lfht_match_fct match, const void* key, cds_lfht_node* node);

private:
    static constexpr uint32_t kMaxTables = 8;
    static constexpr uint32_t kGrowthLog2 = 2;  // each table has 4x the buckets; the
                                                // eighth has 64M, for kMaxSiteCapacity
    // Before the next table is added. 4, not 2: the Rails example's boot (44K stacks) then
    // stops at two tables instead of writing a third of 1 MiB for its last few thousand.
    static constexpr uint64_t kEntriesPerBucket = 4;

    void add_table_if_full(uint32_t newest);

    std::atomic<cds_lfht*> tables_[kMaxTables]{};
    std::atomic<uint32_t> table_count_{0};
    std::atomic<uint64_t> entries_in_newest_{0};
    std::atomic_flag adding_table_ = ATOMIC_FLAG_INIT;
    unsigned long first_buckets_ = 0;
};

}  // namespace leakwrap
