#include "stack_digest.h"

#include <bit>
#include <cstring>

namespace leakwrap {
namespace {

uint64_t load_word(const char* bytes) {
    uint64_t word = 0;
    std::memcpy(&word, bytes, sizeof(word));
    return word;
}

uint64_t final_mix(uint64_t hash) {
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdull;
    hash ^= hash >> 33;
    hash *= 0xc4ceb9fe1a85ec53ull;
    return hash ^ (hash >> 33);
}

}  // namespace

StackDigest stack_digest(std::string_view key) {
    // Two lanes of a multiply-rotate hash with different constants, each mixed at the end.
    uint64_t first = 0x9e3779b97f4a7c15ull ^ key.size();
    uint64_t second = 0xc2b2ae3d27d4eb4full + key.size();
    std::size_t at = 0;
    for (; at + sizeof(uint64_t) <= key.size(); at += sizeof(uint64_t)) {
        const uint64_t word = load_word(key.data() + at);
        first = std::rotl((first ^ word) * 0x87c37b91114253d5ull, 31);
        second = std::rotl((second + word) * 0x4cf5ad432745937full, 27) ^ first;
    }
    uint64_t tail = 0;
    if (at < key.size()) std::memcpy(&tail, key.data() + at, key.size() - at);
    first = final_mix(first ^ tail);
    second = final_mix(second + tail * 0x52dce729ull);
    return {first, second};
}

}  // namespace leakwrap
