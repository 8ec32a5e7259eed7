// A set of 32-bit references (offsets into a segment's stack table, in units of
// layout::kStackAlignment) as one bit each, and once complete, each member's rank: its index
// among the members in reference order. The parser marks the stacks the sites name and the Ruby
// frame records it has checked here, and numbers the stacks of its store by rank: a bit per
// stack-table unit, a small fraction of the table, where a hash table of (reference, value)
// pairs would rival the copy of the segment it indexes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace leakwrap {

class ReferenceSet {
public:
    // Grows to hold `reference`: as large as the greatest member, an eighth of a bit per byte
    // of stack table below it.
    bool insert(uint32_t reference) {
        const std::size_t word = reference >> 6;
        if (word >= words_.size()) words_.resize(word + 1);
        const uint64_t bit = uint64_t{1} << (reference & 63);
        const bool is_new = (words_[word] & bit) == 0;
        words_[word] |= bit;
        return is_new;
    }
    void erase(uint32_t reference) {
        if (contains(reference)) words_[reference >> 6] &= ~(uint64_t{1} << (reference & 63));
    }
    bool contains(uint32_t reference) const {
        const std::size_t word = reference >> 6;
        return word < words_.size() && ((words_[word] >> (reference & 63)) & 1) != 0;
    }

    // Calls visit(reference) for each member, in increasing order.
    template <class Visit>
    void for_each(const Visit& visit) const {
        for (std::size_t word = 0; word < words_.size(); ++word)
            for (uint64_t bits = words_[word]; bits != 0; bits &= bits - 1)
                visit(static_cast<uint32_t>(word * 64 + std::countr_zero(bits)));
    }

    // The members in increasing order, one at a time.
    class Cursor {
    public:
        explicit Cursor(const ReferenceSet& set) : words_(set.words_) {
            if (!words_.empty()) bits_ = words_[0];
        }
        // The next member, if any is left.
        bool next(uint32_t& reference) {
            while (bits_ == 0) {
                if (++word_ >= words_.size()) return false;
                bits_ = words_[word_];
            }
            reference = static_cast<uint32_t>(word_ * 64 + std::countr_zero(bits_));
            bits_ &= bits_ - 1;
            return true;
        }

    private:
        const std::vector<uint64_t>& words_;
        std::size_t word_ = 0;
        uint64_t bits_ = 0;
    };

    // Numbers the members in reference order; then rank() and size() hold until the next change.
    void number_members() {
        ranks_.resize(words_.size());
        uint32_t below = 0;
        for (std::size_t word = 0; word < words_.size(); ++word) {
            ranks_[word] = below;
            below += static_cast<uint32_t>(std::popcount(words_[word]));
        }
        size_ = below;
    }
    // Members below `reference`: a member's index in reference order. After number_members().
    uint32_t rank(uint32_t reference) const {
        const std::size_t word = reference >> 6;
        const uint64_t below = (uint64_t{1} << (reference & 63)) - 1;
        return ranks_[word] + static_cast<uint32_t>(std::popcount(words_[word] & below));
    }
    std::size_t size() const { return size_; }

    // Frees the bits.
    void clear() {
        std::vector<uint64_t>().swap(words_);
        std::vector<uint32_t>().swap(ranks_);
        size_ = 0;
    }

private:
    std::vector<uint64_t> words_;
    std::vector<uint32_t> ranks_;  // per word: members in the words before it
    std::size_t size_ = 0;
};

}  // namespace leakwrap
