// 128 bits standing for a stack key, for the commands that follow sites or rows across
// snapshots by what they are rather than by their ids.
#pragma once

#include <cstdint>
#include <string_view>

namespace leakwrap {

// A key of a Rails process's site runs to hundreds of bytes (eight Ruby file paths), and `diff`
// keeps two snapshots' keys. Two different keys share a digest with a probability of about
// n^2 / 2^129 for n keys.
struct StackDigest {
    uint64_t first = 0;
    uint64_t second = 0;
    bool operator==(const StackDigest&) const = default;
};
StackDigest stack_digest(std::string_view key);

}  // namespace leakwrap
