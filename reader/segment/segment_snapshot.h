// A parsed, self-contained copy of one leakwrap segment: everything the reports need, with no
// reference back to the bytes it came from (parse_segment, in segment_parser.h, makes it).
#pragma once

#include "birth_grid.h"
#include "process_memory.h"

#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <cstddef>
#include <compare>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

// The bytes are not a segment this reader can trust: the message names the first problem found.
class SegmentError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Module {
    std::string path;
    uint64_t load_bias = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    uint32_t load_generation = 0;
    uint32_t unload_generation = 0;
    std::vector<uint8_t> build_id;
};

// What was allocated and freed at a site, in a size class or in the whole process.
struct Counters {
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;

    // Frees can exceed allocations in a corrupt segment, in a sampled estimate, and in a copy of
    // a live segment that caught a site delta in transit (its allocations on their way into the
    // record, their frees already counted in another shard's entry); clamp rather than report a
    // wrapped-around, astronomically large leak.
    uint64_t live_blocks() const { return allocs > frees ? allocs - frees : 0; }
    uint64_t live_bytes() const { return alloc_bytes > free_bytes ? alloc_bytes - free_bytes : 0; }

    // Saturates: sampled estimates from a corrupt segment may come near 2^64, and a pinned
    // maximum reads as what it is where a wrapped sum would look plausible.
    Counters& operator+=(const Counters& other);
    bool operator==(const Counters&) const = default;
};

// A text stored once for the whole run however many copies name it: a Ruby file name, which a
// Rails process's stacks name some 400,000 times over about a thousand files. A copy of each in
// every frame took 80 MB of the reader's memory, a shared pointer 16 bytes a frame; this is the
// text's number, 4 bytes. Texts are interned and never freed: a reader sees a few thousand
// distinct file names in all.
class SharedText {
public:
    SharedText() = default;
    SharedText(std::string_view text) : number_(intern(text)) {}
    SharedText(const std::string& text) : SharedText(std::string_view(text)) {}
    SharedText(const char* text) : SharedText(std::string_view(text)) {}

    const std::string& str() const { return number_ == 0 ? no_text() : text(number_); }
    bool empty() const { return str().empty(); }
    // Equal texts have one number, but for the empty text, which may also have 0.
    uint32_t number() const { return number_; }
    operator std::string_view() const { return str(); }

    // Equal texts have one number (or none and the empty one's).
    bool operator==(const SharedText& other) const { return number_ == other.number_ || str() == other.str(); }
    bool operator==(const char* other) const { return str() == other; }
    bool operator==(const std::string& other) const { return str() == other; }
    bool operator==(std::string_view other) const { return str() == other; }
    std::strong_ordering operator<=>(const SharedText& other) const { return str().compare(other.str()) <=> 0; }
    friend std::ostream& operator<<(std::ostream& out, const SharedText& text) { return out << text.str(); }

private:
    static uint32_t intern(std::string_view text);  // from 1
    static const std::string& text(uint32_t number);
    static const std::string& no_text() {
        static const std::string nothing;
        return nothing;
    }
    uint32_t number_ = 0;  // 0: no text
};

struct RubyLocation {
    SharedText file;
    uint32_t line = 0;
    auto operator<=>(const RubyLocation&) const = default;
};

// One frame of a stored Ruby backtrace, and the node of the next outer one: stored once for
// every backtrace that goes through it, as the writer stores it (layout 6). Copied whole for each
// backtrace, the Ruby frames of a Rails boot took 1.7 MiB; as nodes with a pointer to their
// caller, 1 MiB; with the caller's distance in the StackStore's array of nodes, 12 bytes a node,
// 0.75 MiB. So a node is set where it lies in that array, and read there.
class RubyNode {
public:
    // `caller`, if any, lies in the same array as this node.
    void set(const RubyLocation& location, const RubyNode* caller) {
        location_ = location;
        caller_distance_ = caller == nullptr ? 0 : static_cast<int32_t>(caller - this);
    }
    const RubyLocation& location() const { return location_; }
    // None for the outermost frame kept; a frame is never its own caller.
    const RubyNode* caller() const { return caller_distance_ == 0 ? nullptr : this + caller_distance_; }

private:
    RubyLocation location_;
    int32_t caller_distance_ = 0;  // in nodes
};
static_assert(sizeof(RubyNode) == 12);

// A Ruby backtrace, innermost first: `size` frames from a node outward, a view into the
// StackStore that holds the nodes.
class RubyBacktrace {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = RubyLocation;
        using difference_type = std::ptrdiff_t;
        using pointer = const RubyLocation*;
        using reference = const RubyLocation&;

        Iterator() = default;
        Iterator(const RubyNode* node, std::size_t left) : node_(left == 0 ? nullptr : node), left_(left) {}
        reference operator*() const { return node_->location(); }
        pointer operator->() const { return &node_->location(); }
        Iterator& operator++() {
            node_ = --left_ == 0 ? nullptr : node_->caller();
            return *this;
        }
        Iterator operator++(int) {
            Iterator was = *this;
            ++*this;
            return was;
        }
        bool operator==(const Iterator& other) const { return node_ == other.node_; }

    private:
        const RubyNode* node_ = nullptr;  // none past the last frame
        std::size_t left_ = 0;
    };

    RubyBacktrace() = default;
    // The nodes from `innermost` outward must be at least `size`.
    RubyBacktrace(const RubyNode* innermost, std::size_t size)
        : innermost_(innermost), size_(innermost == nullptr ? 0 : size) {}

    Iterator begin() const { return {innermost_, size_}; }
    Iterator end() const { return {}; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const RubyLocation& front() const { return innermost_->location(); }
    // Walks out from the innermost frame.
    const RubyLocation& operator[](std::size_t index) const {
        const RubyNode* node = innermost_;
        while (index-- > 0) node = node->caller();
        return node->location();
    }
    // The innermost `count` frames, or all if there are fewer.
    RubyBacktrace first(std::size_t count) const { return {innermost_, std::min(count, size_)}; }

    // Frame by frame; backtraces that share their nodes are equal at once.
    bool operator==(const RubyBacktrace& other) const {
        if (size_ != other.size_) return false;
        return innermost_ == other.innermost_ || std::ranges::equal(*this, other);
    }

private:
    const RubyNode* innermost_ = nullptr;
    std::size_t size_ = 0;
};

// The return addresses of a stack, innermost first: a view of the stack's indexes into the table
// of distinct addresses of the StackStore that holds it. The Rails example's stacks have 80,783
// frames over 2,155 addresses, many_stacks' 557,066 over 14: at 8 bytes a frame they took 0.6 and
// 4.3 MiB, and indexes take half.
class NativeFrames {
public:
    class Iterator {
    public:
        using iterator_concept = std::forward_iterator_tag;
        using iterator_category = std::input_iterator_tag;  // dereferences to a value
        using value_type = uint64_t;
        using difference_type = std::ptrdiff_t;
        using reference = uint64_t;

        Iterator() = default;
        Iterator(const uint32_t* index, const uint64_t* addresses) : index_(index), addresses_(addresses) {}
        uint64_t operator*() const { return addresses_[*index_]; }
        Iterator& operator++() {
            ++index_;
            return *this;
        }
        Iterator operator++(int) {
            Iterator was = *this;
            ++index_;
            return was;
        }
        bool operator==(const Iterator& other) const { return index_ == other.index_; }

    private:
        const uint32_t* index_ = nullptr;
        const uint64_t* addresses_ = nullptr;
    };

    NativeFrames() = default;
    NativeFrames(const uint32_t* indexes, const uint64_t* addresses, std::size_t size)
        : indexes_(indexes), addresses_(addresses), size_(size) {}

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    uint64_t operator[](std::size_t index) const { return addresses_[indexes_[index]]; }
    Iterator begin() const { return {indexes_, addresses_}; }
    Iterator end() const { return {indexes_ + size_, addresses_}; }

    // Address by address; in one store an address has one index, so the indexes alone tell.
    bool operator==(const NativeFrames& other) const {
        if (size_ != other.size_) return false;
        if (addresses_ == other.addresses_)
            return indexes_ == other.indexes_ || std::equal(indexes_, indexes_ + size_, other.indexes_);
        return std::ranges::equal(*this, other);
    }

private:
    const uint32_t* indexes_ = nullptr;
    const uint64_t* addresses_ = nullptr;
    std::size_t size_ = 0;
};

struct StackStore;

// A stack as the writer keeps it, once for all its sites: native frames and a Ruby backtrace,
// in the StackStore of its segment. Its frames and nodes are found by index in the store, so
// that it takes 24 bytes with the store's address, as many as it took with two pointers.
struct SiteStack {
    static constexpr uint32_t kNoRuby = UINT32_MAX;

    const StackStore* store = nullptr;
    uint32_t first_frame = 0;           // in the store's frames
    uint32_t innermost_ruby = kNoRuby;  // in the store's nodes
    uint32_t module_generation = 0;
    uint8_t native_depth = 0;  // at most 64 (layout::kMaxDepth)
    uint8_t ruby_depth = 0;    // at most 64 (layout::kMaxRubyDepth)
    // The writer kept only the innermost frames, its tables being nearly full.
    bool reduced = false;

    // Return addresses, innermost first.
    NativeFrames frames() const;
    // The Ruby backtrace, innermost first; empty without one.
    RubyBacktrace ruby() const;
};
static_assert(sizeof(SiteStack) == 24);

// Every stack of one segment that a site names, in flat tables, each sized once: a shared
// pointer and two vectors of its own for each of a Rails process's 50,000 stacks took 12 MiB.
struct StackStore {
    std::vector<uint64_t> addresses;  // each distinct return address once
    std::vector<uint32_t> frames;     // indexes into addresses
    std::vector<RubyNode> ruby;
    std::vector<SiteStack> stacks;  // views into frames and ruby
};

inline NativeFrames SiteStack::frames() const {
    return {store->frames.data() + first_frame, store->addresses.data(), native_depth};
}
inline RubyBacktrace SiteStack::ruby() const {
    return {innermost_ruby == kNoRuby ? nullptr : &store->ruby[innermost_ruby], ruby_depth};
}

// One record of the site table with its stack, as the writer keeps them: the key is (stack,
// size class, birth cell), a stack being native frames and a Ruby backtrace; in sampling mode the
// counters count sampled blocks only. The counters are the record's plus those of every site delta entry
// naming it.
//
// 28 bytes a site, since a snapshot holds every site of its process (127,000 on the Rails
// example's boot, at 48 bytes 6.1 MiB of a reader that may take twice the segment's 7.4): the
// four counters are kept in 32 bits each while they fit, as nearly all do (a site that allocated
// 4 GiB is a rare one), and on the heap once one does not; the size class and the flags ride in
// the top 16 bits of the stack's address, which no user-space address of x86-64 or AArch64
// uses (with the birth cell); and the fields are 32-bit words, so that no padding rounds the site up to 32 bytes.
class Site {
public:
    Site() = default;
    Site(const Site& other);
    Site(Site&& other) noexcept;
    Site& operator=(Site other) noexcept;
    ~Site();

    Counters counters() const;
    void set_counters(const Counters& counters);

    // An overflow site has no stack; any other has one.
    void set_key(const SiteStack* stack, uint32_t size_class, uint32_t birth_cell, bool overflow);
    const SiteStack* stack() const {
        return reinterpret_cast<const SiteStack*>(static_cast<uintptr_t>(tagged() & kAddressMask));
    }
    uint32_t size_class() const { return static_cast<uint32_t>(tagged() >> kClassShift) & kSevenBits; }
    // Of the snapshot's BirthGrid; 0 without one, and for an overflow site.
    uint32_t birth_cell() const { return static_cast<uint32_t>(tagged() >> kBirthShift) & kSevenBits; }
    bool overflow() const { return (tagged() & kOverflowBit) != 0; }
    // Every ordinary record, and an overflow record that counted an allocation (the writer makes
    // all of those at start, used or not).
    bool in_use() const { return !overflow() || counters().allocs > 0; }
    // What tells the records of one call site apart from others': its stack and size class.
    uint64_t key_without_birth() const { return tagged() & (kAddressMask | kClassBits | kOverflowBit); }

    NativeFrames frames() const { return stack() ? stack()->frames() : NativeFrames(); }
    RubyBacktrace ruby() const { return stack() ? stack()->ruby() : RubyBacktrace(); }
    uint32_t module_generation() const { return stack() ? stack()->module_generation : 0; }
    bool reduced() const { return stack() && stack()->reduced; }

    uint32_t id = 0;  // slot index in the site table

private:
    static constexpr uint32_t kSevenBits = 0x7f;  // layout::kSizeClassCount, kMaxBirthCells <= 128
    static_assert(layout::kSizeClassCount <= kSevenBits + 1 && layout::kMaxBirthCells <= kSevenBits + 1);
    static constexpr unsigned kClassShift = 48;
    static constexpr uint64_t kAddressMask = (uint64_t{1} << kClassShift) - 1;
    static constexpr uint64_t kClassBits = uint64_t{kSevenBits} << kClassShift;
    static constexpr uint64_t kOverflowBit = uint64_t{1} << 55;
    static constexpr uint64_t kWideBit = uint64_t{1} << 56;  // the counters are on the heap
    static constexpr unsigned kBirthShift = 57;

    uint64_t tagged() const { return uint64_t{tagged_[1]} << 32 | tagged_[0]; }
    void set_tagged(uint64_t value) {
        tagged_[0] = static_cast<uint32_t>(value);
        tagged_[1] = static_cast<uint32_t>(value >> 32);
    }
    bool wide() const { return (tagged() & kWideBit) != 0; }
    Counters* wide_counters() const;
    void free_wide();

    // allocs, frees, alloc_bytes, free_bytes; when wide, the address of their Counters.
    uint32_t counts_[4] = {};
    // The stack's address, the size class, the flags, the birth cell.
    uint32_t tagged_[2] = {};
};
static_assert(sizeof(Site) == 28);

// One process of a snapshot merged from a process tree (--children): its own totals and memory,
// and the ids its site records took in the merged snapshot, [first_site_id, end_site_id).
struct TreeMember {
    int32_t pid = 0;
    std::string command_line;
    Counters totals;
    std::optional<ProcessMemory> memory;
    uint64_t first_site_id = 0;
    uint64_t end_site_id = 0;
};

struct Snapshot {
    int32_t pid = 0;
    int32_t parent_pid = 0;
    uint64_t start_time_ticks = 0;
    uint64_t created_unix_ns = 0;
    std::string boot_id;
    std::string exe;
    std::string command_line;
    uint32_t max_depth = 0;
    uint32_t max_ruby_depth = 0;
    uint32_t site_capacity = 0;
    uint32_t sites_claimed = 0;    // as recorded; may exceed site_capacity
    uint64_t stacks_capacity = 0;  // bytes of the stack table
    uint64_t stacks_used = 0;      // as recorded; may exceed stacks_capacity
    uint64_t lost_sites = 0;
    uint64_t reduced_stacks = 0;
    // Why allocations went to the overflow sites, as the writer tells it: its tables were
    // (nearly) full, where LEAKWRAP_MAX_SITES helps; else /dev/shm had no room to back them, where
    // it does not. The writer cuts stacks short within the last 1/16 of its tables.
    bool tables_were_full() const {
        return sites_claimed >= site_capacity - site_capacity / 16 ||
               stacks_used > stacks_capacity - stacks_capacity / 16;
    }
    uint32_t process_state = 0;
    uint64_t sample_interval = 0;  // 0: exact mode
    // What the writer's own tables hold of its process's private memory, as it counts them
    // (Header::private_kib); none from a writer of a layout before 7.
    std::optional<uint64_t> writer_private_bytes;
    // When the sites' blocks were allocated (birth_grid.h); none from a writer of a layout before 8.
    std::optional<BirthGrid> births;
    // What the allocator below said of its own memory at its last reading (layout 9 on).
    std::optional<layout::AllocatorStatistics> allocator_statistics;
    // The blocks the bins had counted as that reading began (layout 10 on): what the totals
    // count beyond them was allocated or freed since.
    std::optional<Counters> counted_at_allocator_reading;
    // What --born-after / --born-before left of the sites (birth_window.h); none when all are here.
    std::optional<BirthSelection> birth_selection;
    std::vector<Module> modules;
    std::vector<Site> sites;  // the ready records, in slot order
    // What the sites' stacks are kept in: one store for a segment, one per process of a merged
    // tree. Shared, so that a copy of the snapshot (or of its sites) keeps them.
    std::vector<std::shared_ptr<const StackStore>> stack_stores;
    // Per size class (index = class), summed over the shards: exact, but in sampling mode with
    // bare unsampled blocks (Header::flags kBinsSampled, bins_estimated), where the writer
    // counted sampled blocks only and the parser estimated them as the rows estimate sites.
    std::vector<Counters> bins;
    Counters totals;  // the sum over the bins
    bool bins_estimated = false;
    // Sites whose counters (record and deltas) show more frees than allocations, or more bytes
    // freed than allocated, and the first of them. No writer counts so, but a copy of a live
    // segment can (see Counters::live_blocks), so they are flagged rather than rejected.
    std::size_t impossible_sites = 0;
    uint32_t first_impossible_site = 0;
    // How many copies of the segment were taken before this one was kept (segment_directory.h).
    uint32_t reads = 1;
    // The kernel's view of the process when the segment was read from it alive; none post
    // mortem, and for a segment read from a file.
    std::optional<ProcessMemory> memory;
    // Empty for one process; for a merged process tree, every process in it, the root first.
    std::vector<TreeMember> members;

    bool sampled() const { return sample_interval != 0; }
    // Site records that hold a call site (Site::in_use), those --born-after and --born-before
    // left out included: the whole process's, as the totals are.
    std::size_t sites_in_use() const;
    // The counters of every site added up: the totals' (the bins') in exact mode, but for what a
    // copy of a live segment caught between the sites and the bins.
    Counters sum_over_sites() const;
    // Gives back the sites and the stacks they name, the bulk of a snapshot, keeping the rest
    // (identity, totals, bins, memory): what a sampler keeps of a sample while it reads the next.
    void drop_sites();
};

// One line saying which sites' counters are impossible and what that means, if any are.
std::optional<std::string> impossible_counts_warning(const Snapshot& snapshot);

}  // namespace leakwrap
