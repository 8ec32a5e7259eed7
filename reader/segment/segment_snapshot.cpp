#include "segment_snapshot.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace leakwrap {

namespace {

// Every text SharedText holds, by number, in chunks that never move: a number is handed out
// (under the lock) after its text is stored, so its holders read the text without the lock
// (serve's threads).
class InternedTexts {
public:
    uint32_t intern(std::string_view text) {
        const std::lock_guard lock(mutex_);
        if (const auto found = numbers_.find(text); found != numbers_.end()) return found->second;
        const uint32_t number = count_ + 1;
        const std::size_t chunk = number >> kChunkBits;
        if (chunk >= kChunks) throw std::length_error("more than 4 million distinct Ruby file names");
        if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr)
            chunks_[chunk].store(new std::string[kChunkSize], std::memory_order_release);
        std::string& stored = chunks_[chunk].load(std::memory_order_relaxed)[number & (kChunkSize - 1)];
        stored = text;
        numbers_.emplace(stored, number);
        count_ = number;
        return number;
    }

    const std::string& text(uint32_t number) const {
        return chunks_[number >> kChunkBits].load(std::memory_order_acquire)[number & (kChunkSize - 1)];
    }

private:
    static constexpr uint32_t kChunkBits = 12;
    static constexpr std::size_t kChunkSize = std::size_t{1} << kChunkBits;
    static constexpr std::size_t kChunks = std::size_t{1} << 10;

    std::mutex mutex_;
    std::unordered_map<std::string_view, uint32_t> numbers_;  // views of the stored texts
    uint32_t count_ = 0;
    std::atomic<std::string*> chunks_[kChunks] = {};
};

InternedTexts& interned_texts() {
    static InternedTexts* texts = new InternedTexts;  // never destroyed: texts live for the run
    return *texts;
}

}  // namespace

uint32_t SharedText::intern(std::string_view text) { return interned_texts().intern(text); }

const std::string& SharedText::text(uint32_t number) { return interned_texts().text(number); }

Site::Site(const Site& other) : id(other.id), tagged_{other.tagged_[0], other.tagged_[1]} {
    set_tagged(tagged() & ~kWideBit);
    set_counters(other.counters());
}

Site::Site(Site&& other) noexcept
    : id(other.id),
      counts_{other.counts_[0], other.counts_[1], other.counts_[2], other.counts_[3]},
      tagged_{other.tagged_[0], other.tagged_[1]} {
    other.set_tagged(other.tagged() & ~kWideBit);
}

Site& Site::operator=(Site other) noexcept {
    std::swap(counts_, other.counts_);
    std::swap(tagged_, other.tagged_);
    id = other.id;
    return *this;
}

Site::~Site() { free_wide(); }

Counters* Site::wide_counters() const {
    Counters* counters = nullptr;
    std::memcpy(&counters, counts_, sizeof(counters));
    return counters;
}

void Site::free_wide() {
    if (!wide()) return;
    delete wide_counters();
    set_tagged(tagged() & ~kWideBit);
}

void Site::set_key(const SiteStack* stack, uint32_t size_class, uint32_t birth_cell, bool overflow) {
    const auto address = reinterpret_cast<uintptr_t>(stack);
    if ((address & ~kAddressMask) != 0 || size_class > kSevenBits || birth_cell > kSevenBits)
        throw std::logic_error("a site's stack address, size class or birth cell does not fit its key");
    set_tagged(address | uint64_t{size_class} << kClassShift | uint64_t{birth_cell} << kBirthShift |
               (overflow ? kOverflowBit : 0) | (tagged() & kWideBit));
}

Counters Site::counters() const {
    if (wide()) return *wide_counters();
    return {counts_[0], counts_[1], counts_[2], counts_[3]};
}

void Site::set_counters(const Counters& counters) {
    if ((counters.allocs | counters.frees | counters.alloc_bytes | counters.free_bytes) <= UINT32_MAX) {
        free_wide();
        counts_[0] = static_cast<uint32_t>(counters.allocs);
        counts_[1] = static_cast<uint32_t>(counters.frees);
        counts_[2] = static_cast<uint32_t>(counters.alloc_bytes);
        counts_[3] = static_cast<uint32_t>(counters.free_bytes);
    } else if (wide()) {
        *wide_counters() = counters;
    } else {
        Counters* stored = new Counters(counters);
        std::memcpy(counts_, &stored, sizeof(stored));
        set_tagged(tagged() | kWideBit);
    }
}

Counters& Counters::operator+=(const Counters& other) {
    const auto saturating_add = [](uint64_t& sum, uint64_t more) {
        if (__builtin_add_overflow(sum, more, &sum)) sum = UINT64_MAX;
    };
    saturating_add(allocs, other.allocs);
    saturating_add(frees, other.frees);
    saturating_add(alloc_bytes, other.alloc_bytes);
    saturating_add(free_bytes, other.free_bytes);
    return *this;
}

void Snapshot::drop_sites() {
    // Assigned anew: `sites = {}` would clear them and keep their memory, 4 MiB on a Rails
    // process, next to the sites of the sample read after.
    sites = std::vector<Site>();
    stack_stores = std::vector<std::shared_ptr<const StackStore>>();
}

std::size_t Snapshot::sites_in_use() const {
    return std::count_if(sites.begin(), sites.end(), [](const Site& site) { return site.in_use(); }) +
           (birth_selection ? birth_selection->records_left_out : 0);
}

Counters Snapshot::sum_over_sites() const {
    Counters sum;
    for (const Site& site : sites) sum += site.counters();
    return sum;
}

std::optional<std::string> impossible_counts_warning(const Snapshot& snapshot) {
    if (snapshot.impossible_sites == 0) return std::nullopt;
    const auto first = std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                                    [&](const Site& site) { return site.id == snapshot.first_impossible_site; });
    const Counters counters = first->counters();
    std::string line = "site " + std::to_string(first->id) + " counts more frees than allocations (" +
                       std::to_string(counters.allocs) + " allocs, " + std::to_string(counters.frees) + " frees, " +
                       std::to_string(counters.alloc_bytes) + " B allocated, " + std::to_string(counters.free_bytes) +
                       " B freed)";
    if (snapshot.impossible_sites > 1)
        line += ", and " + std::to_string(snapshot.impossible_sites - 1) + " more site(s) do";
    if (snapshot.reads > 1)
        return line + ": shown with 0 live; it did so in each of " + std::to_string(snapshot.reads) +
               " copies of the live segment, so the segment is corrupt";
    return line +
           ": shown with 0 live; the segment is corrupt, or its process was killed in the "
           "middle of an update";
}

}  // namespace leakwrap
