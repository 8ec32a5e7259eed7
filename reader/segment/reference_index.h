// A map from 32-bit references (offsets into a segment's stack table, in units) to 32-bit values,
// in one flat array: what the parser remembers about each stack and Ruby frame record it has
// checked. A Rails boot names 44,000 stacks and 55,000 frame records; as std::unordered_map and
// std::unordered_set nodes they took 4 MiB of small blocks, which stayed resident after the
// parse. Here it is 8 bytes a slot, at most half full, in one block that is unmapped when freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace leakwrap {

class ReferenceIndex {
public:
    // The value of `reference`, inserting `value` first if it has none; and whether it was new.
    std::pair<uint32_t*, bool> try_emplace(uint32_t reference, uint32_t value) {
        if (2 * (count_ + 1) > slots_.size()) grow();
        Slot* slot = find(reference);
        if (slot->key != kEmpty) return {&slot->value, false};
        *slot = {reference, value};
        ++count_;
        return {&slot->value, true};
    }

    // Frees the array.
    void clear() {
        std::vector<Slot>().swap(slots_);
        count_ = 0;
    }

private:
    struct Slot {
        uint32_t key;
        uint32_t value;
    };
    // No reference looked up is this: it is the layout's kNoStack and kNoRubyFrame, which the
    // parser rejects or passes over before it looks a reference up.
    static constexpr uint32_t kEmpty = UINT32_MAX;

    // The slot of `reference`, or the empty one where it belongs. The array is a power of two in
    // size and never full, so the probe ends.
    Slot* find(uint32_t reference) {
        const std::size_t mask = slots_.size() - 1;
        std::size_t at = (reference * 0x9e3779b97f4a7c15ull) >> 32 & mask;
        while (slots_[at].key != kEmpty && slots_[at].key != reference) at = (at + 1) & mask;
        return &slots_[at];
    }

    void grow() {
        std::vector<Slot> old(slots_.empty() ? 1024 : 2 * slots_.size(), Slot{kEmpty, 0});
        old.swap(slots_);
        for (const Slot& slot : old)
            if (slot.key != kEmpty) *find(slot.key) = slot;
    }

    std::vector<Slot> slots_;
    std::size_t count_ = 0;
};

}  // namespace leakwrap
