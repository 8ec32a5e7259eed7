// Ranking many candidates for the first few: the kept ones in a heap whose top is the worst of
// them, so that what is held is the few, not every candidate (a Rails process has 51,000 rows
// and a report or a screen shows 20).
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace leakwrap {

// The `limit` first of the values offered, by `before` (before(a, b): a ranks ahead of b).
template <class T, class Before>
class BestOf {
public:
    // Room for `limit` is taken at once: grown by doubling to every row of a report of every row,
    // and shrunk to fit, the table stood at twice its size for a moment.
    BestOf(std::size_t limit, Before before) : limit_(limit), before_(std::move(before)) { kept_.reserve(limit); }

    void offer(const T& value) {
        if (kept_.size() < limit_) {
            kept_.push_back(value);
            std::push_heap(kept_.begin(), kept_.end(), before_);
        } else if (!kept_.empty() && before_(value, kept_.front())) {
            std::pop_heap(kept_.begin(), kept_.end(), before_);
            kept_.back() = value;
            std::push_heap(kept_.begin(), kept_.end(), before_);
        }
    }

    // The values kept, first ranked first.
    std::vector<T> take() && {
        std::sort_heap(kept_.begin(), kept_.end(), before_);
        return std::move(kept_);
    }

private:
    std::size_t limit_;
    Before before_;
    std::vector<T> kept_;
};

}  // namespace leakwrap
