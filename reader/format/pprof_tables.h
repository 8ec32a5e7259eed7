// The tables a pprof profile is built with, flat: a Rails process's profile names tens of
// thousands of Ruby lines, each a string ("ruby:file:line"), a function and a location of its
// own. Kept as protobuf strings with a hash map of views, std::maps of ids, and serialized fields
// in strings grown by doubling, they made the profile of the Rails example peak 3.7 MiB higher;
// here a string costs its text and about 20 bytes, a function or location about 32 and its
// serialized bytes.
#pragma once

#include "flat_slots.h"
#include "proto_wire.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap {

// Bytes appended in chunks that never move, so that a view of what was appended stays valid and
// growing copies nothing: grown by doubling, the string table of a Rails profile took twice its
// size at each copy.
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
    void append_varint(uint64_t value) {
        char bytes[10];
        append({bytes, encode_varint(value, bytes)});
    }
    // Every byte in order, then none kept.
    void flush(const std::function<void(std::string_view)>& write) {
        for (const std::string& chunk : chunks_) write(chunk);
        chunks_ = {};
    }

private:
    static constexpr std::size_t kChunk = 64 * 1024;
    std::vector<std::string> chunks_;
};

inline uint64_t mixed(uint64_t value) {
    value ^= value >> 33;
    value *= 0xff51afd7ed558ccdull;
    return value ^ (value >> 33);
}

// The profile's string table (field `field` of the profile, one member per string) kept as the
// bytes it is written as, each string at the index pprof numbers it by.
class PprofStringTable {
public:
    explicit PprofStringTable(int field) : tag_(field_key(field, WireType::length_delimited)) {}

    int64_t index(std::string_view text) {
        uint32_t* slot = slots_.find(*this, text, hash(text));
        if (*slot != 0) return *slot - 1;
        bytes_.append_varint(tag_);
        bytes_.append_varint(text.size());
        texts_.push_back(bytes_.append(text));
        slots_.occupy(slot, texts_.size() - 1);
        return static_cast<int64_t>(texts_.size() - 1);
    }

    // The table's bytes, once every string is in.
    ChunkedBytes& bytes() { return bytes_; }

    bool key_equals(std::size_t entry, std::string_view text) const { return texts_[entry] == text; }
    uint64_t hash_of(std::size_t entry) const { return hash(texts_[entry]); }

private:
    static uint64_t hash(std::string_view text) { return std::hash<std::string_view>{}(text); }

    uint64_t tag_;
    ChunkedBytes bytes_;
    std::deque<std::string_view> texts_;  // views of bytes_, grown without copying
    FlatSlots<PprofStringTable> slots_;
};

// An id for each pair of numbers, made by the caller the first time the pair is seen.
class PairIds {
public:
    using Pair = std::pair<uint64_t, uint64_t>;

    // The id of `key`, or 0 if it has none yet.
    uint64_t find(const Pair& key) {
        slot_ = slots_.find(*this, key, hash(key));
        return *slot_ == 0 ? 0 : entries_[*slot_ - 1].id;
    }
    // Gives `key`, just looked for with find() and not found, its id.
    void add(const Pair& key, uint64_t id) {
        entries_.push_back({key, id});
        slots_.occupy(slot_, entries_.size() - 1);
    }

    bool key_equals(std::size_t entry, const Pair& key) const { return entries_[entry].key == key; }
    uint64_t hash_of(std::size_t entry) const { return hash(entries_[entry].key); }

private:
    struct Entry {
        Pair key;
        uint64_t id;
    };
    static uint64_t hash(const Pair& key) { return mixed(key.first * 31 + mixed(key.second)); }

    std::deque<Entry> entries_;  // grown without copying: ids are made through the whole profile
    FlatSlots<PairIds> slots_;
    uint32_t* slot_ = nullptr;
};

}  // namespace leakwrap
