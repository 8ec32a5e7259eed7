// A map from 32-bit references (offsets into a segment's stack table, in units) to 32-bit values:
// what the parser remembers about each stack and Ruby frame record it has checked. A Rails boot
// names 44,000 stacks and 55,000 frame records; as std::unordered_map and std::unordered_set
// nodes they took 4 MiB of small blocks, which stayed resident after the parse. Here an entry is
// 8 bytes and its share of the slots 8 more (FlatSlots), in blocks unmapped when freed.
#pragma once

#include "flat_slots.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace leakwrap {

class ReferenceIndex {
public:
    // The value of `reference`, inserting `value` first if it has none; and whether it was new.
    // The pointer is valid until the next insertion.
    std::pair<uint32_t*, bool> try_emplace(uint32_t reference, uint32_t value) {
        uint32_t* slot = slots_.find(*this, reference, hash(reference));
        if (*slot != 0) return {&entries_[*slot - 1].value, false};
        entries_.push_back({reference, value});
        slots_.occupy(slot, entries_.size() - 1);
        return {&entries_.back().value, true};
    }

    // Frees the tables.
    void clear() {
        std::vector<Entry>().swap(entries_);
        slots_.clear();
    }

    bool key_equals(std::size_t entry, uint32_t reference) const { return entries_[entry].reference == reference; }
    uint64_t hash_of(std::size_t entry) const { return hash(entries_[entry].reference); }

private:
    struct Entry {
        uint32_t reference;
        uint32_t value;
    };
    static uint64_t hash(uint32_t reference) { return (reference * 0x9e3779b97f4a7c15ull) >> 32; }

    std::vector<Entry> entries_;
    FlatSlots<ReferenceIndex> slots_;
};

}  // namespace leakwrap
