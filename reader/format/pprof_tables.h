// The tables a pprof profile is built with, flat: a Rails process's profile names tens of
// thousands of Ruby lines, each a string ("ruby:file:line"), a function and a location of its
// own. Kept as protobuf strings with a hash map of views, std::maps of ids, and serialized fields
// in strings grown by doubling, they made the profile of the Rails example peak 3.7 MiB higher;
// here a string costs its text and about 20 bytes, a function or location about 32. Their
// serialized bytes are written as they are made, not kept (see ProfileSink).
#pragma once

#include "flat_slots.h"
#include "proto_wire.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap {

// Bytes appended in chunks that never move, so that a view of what was appended stays valid and
// growing copies nothing: a table grown by doubling holds twice its size at each copy.
class ChunkedBytes {
public:
    // Where `bytes` now lie, in one piece.
    std::string_view append(std::string_view bytes) {
        if (chunks_.empty() || chunks_.back().capacity() - chunks_.back().size() < bytes.size())
            chunks_.emplace_back().reserve(std::max(kChunk, bytes.size()));
        std::string& chunk = chunks_.back();
        chunk += bytes;
        return std::string_view(chunk).substr(chunk.size() - bytes.size());
    }

private:
    static constexpr std::size_t kChunk = 64 * 1024;
    std::vector<std::string> chunks_;
};

// Where the profile's fields go as they are made. Protobuf reads a message's fields in any order
// and appends each repeated one in the order met, so a string, mapping, function or location can
// be written as soon as it exists, between the samples: kept serialized until the last sample,
// the tables of the Rails example's profile held 3 MiB.
using ProfileSink = std::function<void(std::string_view)>;

// The profile's string table (field `field` of the profile, one member per string): each string
// written when first indexed, so that its index is the number of strings written before it.
class PprofStringTable {
public:
    PprofStringTable(int field, ProfileSink write)
        : tag_(field_key(field, WireType::length_delimited)), write_(std::move(write)) {}

    // The index of `text`, written first if it has none.
    int64_t index(std::string_view text) {
        uint32_t* slot = slots_.find(*this, text, hash(text));
        if (*slot != 0) return entries_[*slot - 1].index;
        entries_.push_back({texts_.append(text), append(text)});
        slots_.occupy(slot, entries_.size() - 1);
        return entries_.back().index;
    }

    // Writes `text` under an index of its own, kept nowhere: for a text that its caller makes
    // once (pprof allows a text more than once in the table).
    int64_t append(std::string_view text) {
        char head[20];
        const std::size_t tag_length = encode_varint(tag_, head);
        write_({head, tag_length + encode_varint(text.size(), head + tag_length)});
        write_(text);
        return count_++;
    }

    bool key_equals(std::size_t entry, std::string_view text) const { return entries_[entry].text == text; }
    uint64_t hash_of(std::size_t entry) const { return hash(entries_[entry].text); }

private:
    struct Entry {
        std::string_view text;  // in texts_
        int64_t index;
    };
    static uint64_t hash(std::string_view text) { return std::hash<std::string_view>{}(text); }

    uint64_t tag_;
    ProfileSink write_;
    int64_t count_ = 0;
    ChunkedBytes texts_;
    std::deque<Entry> entries_;  // grown without copying
    FlatSlots<PprofStringTable> slots_;
};

// An id for each pair of numbers, made by the caller the first time the pair is seen. The second
// number of a pair is a line or a string's index, and ids count a profile's functions or
// locations: each fits 32 bits, so that an entry takes 16 bytes, not 24 (the Rails example's
// profile makes 28,000 of them).
class PairIds {
public:
    using Pair = std::pair<uint64_t, uint32_t>;

    // The id of `key`, or 0 if it has none yet.
    uint64_t find(const Pair& key) {
        slot_ = slots_.find(*this, key, hash(key));
        return *slot_ == 0 ? 0 : entries_[*slot_ - 1].id;
    }
    // Gives `key`, just looked for with find() and not found, its id.
    void add(const Pair& key, uint64_t id) {
        if (id > UINT32_MAX) throw std::length_error("more than 4 billion pprof functions or locations");
        entries_.push_back({key.first, key.second, static_cast<uint32_t>(id)});
        slots_.occupy(slot_, entries_.size() - 1);
    }

    bool key_equals(std::size_t entry, const Pair& key) const { return entries_[entry].key() == key; }
    uint64_t hash_of(std::size_t entry) const { return hash(entries_[entry].key()); }

private:
    struct Entry {
        uint64_t first;
        uint32_t second;
        uint32_t id;
        Pair key() const { return {first, second}; }
    };
    static_assert(sizeof(Entry) == 16);
    static uint64_t hash(const Pair& key) { return mixed_key(key.first * 31 + mixed_key(key.second)); }

    std::deque<Entry> entries_;  // grown without copying: ids are made through the whole profile
    FlatSlots<PairIds> slots_;
    uint32_t* slot_ = nullptr;
};

}  // namespace leakwrap
