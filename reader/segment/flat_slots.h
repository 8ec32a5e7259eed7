// Open addressing over a vector of entry numbers, for tables that keep their entries elsewhere
// (in a vector of their own, or derived from their data) and need only to find one by key: 4
// bytes a slot, at most half full, in one block that is unmapped when freed, where
// std::unordered_map nodes would be small blocks that stay in the heap after they are freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace leakwrap {

// A hash of an integer key (an address, an id) for FlatSlots, which takes a slot from the low
// bits: those of addresses and ids are poorly spread.
inline uint64_t mixed_key(uint64_t value) {
    value ^= value >> 33;
    value *= 0xff51afd7ed558ccdull;
    return value ^ (value >> 33);
}

// `Table` says what an entry's key is: key_equals(entry, key) and hash_of(entry), entries
// numbered from 0.
template <class Table>
class FlatSlots {
public:
    // The slot of the entry whose key is `key`, or the empty slot where a new one goes: *slot is
    // the entry's number + 1, or 0. Valid until the next find().
    template <class Key>
    uint32_t* find(const Table& table, const Key& key, uint64_t hash) {
        if (2 * (count_ + 1) > slots_.size()) grow(table);
        const std::size_t mask = slots_.size() - 1;
        std::size_t at = hash & mask;
        while (slots_[at] != 0 && !table.key_equals(slots_[at] - 1, key)) at = (at + 1) & mask;
        return &slots_[at];
    }
    // Puts entry `entry` in the empty slot find() gave.
    void occupy(uint32_t* slot, std::size_t entry) {
        if (entry >= UINT32_MAX) throw std::length_error("more than 4 billion entries in one table");
        *slot = static_cast<uint32_t>(entry + 1);
        ++count_;
    }
    void clear() {
        std::vector<uint32_t>().swap(slots_);
        count_ = 0;
    }

private:
    void grow(const Table& table) {
        std::vector<uint32_t> old(slots_.empty() ? 1024 : 2 * slots_.size(), 0);
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (const uint32_t entry : old) {
            if (entry == 0) continue;
            std::size_t at = table.hash_of(entry - 1) & mask;
            while (slots_[at] != 0) at = (at + 1) & mask;
            slots_[at] = entry;
        }
    }

    std::vector<uint32_t> slots_;
    std::size_t count_ = 0;
};

}  // namespace leakwrap
