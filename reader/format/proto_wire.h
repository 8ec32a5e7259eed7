// The protocol buffers wire format, the part a pprof profile needs, written by hand: linked for
// this one format, libprotobuf would weigh on the reader's resident memory in every command.
// The bytes are those protobuf's generated code writes for the same message (proto3), as long as
// fields are appended in the order of their numbers: a scalar that is 0 (or false) is left out,
// repeated numbers are packed, a message or repeated string is written even when empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace leakwrap {

// `value` as a varint into `out` (room for 10 bytes); returns its length.
inline std::size_t encode_varint(uint64_t value, char* out) {
    std::size_t length = 0;
    for (; value >= 0x80; value >>= 7) out[length++] = static_cast<char>((value & 0x7f) | 0x80);
    out[length++] = static_cast<char>(value);
    return length;
}

inline void append_varint(std::string& bytes, uint64_t value) {
    char encoded[10];
    bytes.append(encoded, encode_varint(value, encoded));
}

// A field's key: its number and how its value is laid out.
enum class WireType : uint8_t { varint = 0, length_delimited = 2 };

inline uint64_t field_key(int field, WireType type) {
    return static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(type);
}

class ProtoMessage {
public:
    // uint64, and int64 as two's complement (protobuf's int64, not sint64).
    ProtoMessage& number(int field, uint64_t value) {
        if (value == 0) return *this;
        append_varint(bytes_, field_key(field, WireType::varint));
        append_varint(bytes_, value);
        return *this;
    }
    ProtoMessage& number(int field, int64_t value) { return number(field, static_cast<uint64_t>(value)); }
    ProtoMessage& flag(int field, bool value) { return number(field, uint64_t{value}); }

    // A repeated uint64 or int64 field, packed.
    template <class Number>
    ProtoMessage& numbers(int field, std::span<const Number> values) {
        if (values.empty()) return *this;
        std::string packed;
        for (const Number value : values) append_varint(packed, static_cast<uint64_t>(value));
        return bytes(field, packed);
    }

    // A string, or one member of a repeated string or message field.
    ProtoMessage& bytes(int field, std::string_view value) {
        append_varint(bytes_, field_key(field, WireType::length_delimited));
        append_varint(bytes_, value.size());
        bytes_ += value;
        return *this;
    }
    ProtoMessage& message(int field, const ProtoMessage& inner) { return bytes(field, inner.bytes_); }

    const std::string& serialized() const { return bytes_; }

private:
    std::string bytes_;
};

}  // namespace leakwrap
