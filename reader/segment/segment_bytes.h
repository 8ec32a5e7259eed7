// Reading the bytes of a segment copy, shared by the parser's parts (segment_parser.cpp,
// stack_table_reader.cpp, old_layouts.cpp): each of them reads records and strings of the same
// untrusted bytes, and each reports the first problem it finds the same way.
#pragma once

#include "segment_snapshot.h"

#include <leakwrap/segment_layout.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace leakwrap::segment_parsing {

[[noreturn]] inline void fail(const std::string& message) { throw SegmentError(message); }

inline std::string number(uint64_t value) { return std::to_string(value); }

// Callers bounds-check first; memcpy because the copy carries no alignment guarantee.
template <class T>
T load(std::span<const std::byte> bytes, uint64_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

class StringPool {
public:
    StringPool(std::span<const std::byte> pool) : pool_(pool) {}

    std::string get(layout::StringRef ref, const std::string& owner) const {
        // Checked against the capacity, not strings_used: a record copied after the header may
        // point at strings handed out after strings_used was read.
        if (ref.offset > pool_.size() || ref.length > pool_.size() - ref.offset)
            fail(owner + " string [" + number(ref.offset) + ", +" + number(ref.length) + ") lies outside the " +
                 number(pool_.size()) + "-byte string pool");
        const auto* begin = reinterpret_cast<const char*>(pool_.data()) + ref.offset;
        return std::string(begin, ref.length);
    }

    // A string named by its offset alone: it must end with a NUL inside the pool. owner() names
    // its owner for the message, made only if there is one to give.
    template <class Owner>
    std::string get_terminated(uint32_t offset, const Owner& owner) const {
        const std::string_view pool(reinterpret_cast<const char*>(pool_.data()), pool_.size());
        const auto end = offset < pool.size() ? pool.find('\0', offset) : std::string_view::npos;
        if (end == std::string_view::npos)
            fail(owner() + " string at offset " + number(offset) + " has no NUL inside the " + number(pool_.size()) +
                 "-byte string pool");
        return std::string(pool.substr(offset, end - offset));
    }

private:
    std::span<const std::byte> pool_;
};

}  // namespace leakwrap::segment_parsing
