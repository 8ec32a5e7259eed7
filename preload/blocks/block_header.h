// The 16-byte header leakwrap puts before every block it tracks (but those aligned to a page or
// more: aligned_blocks.h), so that free() finds the block's site and size in O(1), and the
// arithmetic between the real block ("raw", what the underlying allocator returned) and the user
// pointer.
//
// Layout (little-endian x86_64), immediately before the user pointer:
//   user - 16: size_and_shift  requested size (low 56 bits) | where raw lies (high 8 bits):
//                              (user - raw) / 16 for an offset up to kMaxPaddedAlignment, else
//                              kPowerOfTwoOffset + log2(user - raw)
//   user -  8: site            index of the call site in the segment's site table
//   user -  4: tag             bit 31 always set, other bits depend on the user address
// The word at user - 8 overlaps glibc's chunk-size field for a block leakwrap did not hand out;
// glibc sizes never have bit 63 set, so such a foreign block (or a headerless one) can never pass
// tag_matches() and is passed to the real free() untouched.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

struct BlockHeader {
    uint64_t size_and_shift;
    uint32_t site;
    uint32_t tag;
};
static_assert(sizeof(BlockHeader) == 16);

inline constexpr std::size_t kHeaderSize = sizeof(BlockHeader);
// Site of a block that sampling mode did not attribute: it counts in the bins only.
inline constexpr uint32_t kUnsampledSite = 0xffffffffu;
// What malloc guarantees on x86_64 glibc (alignof(max_align_t)); blocks asking for no more than
// this take the plain path: raw from the real malloc, user = raw + 16, still 16-aligned.
inline constexpr std::size_t kNaturalAlignment = 16;
// Blocks asking for more, up to this, are padded: raw from the real malloc, `alignment` bytes
// larger, and user the first aligned address at least 16 bytes into it (so user - raw is a
// multiple of 16 from 16 to the alignment). Cheaper than the real memalign, which splits off and
// keeps the pieces around an aligned block: many small aligned blocks padded take less memory
// than they do bare, where memalign's would take more.
inline constexpr std::size_t kMaxPaddedAlignment = 2048;
// The high byte of size_and_shift at and above this holds a log2 offset (over-aligned blocks
// from the real memalign, user = raw + alignment); below it, offset / 16.
inline constexpr uint64_t kPowerOfTwoOffset = 0xC0;
static_assert(kMaxPaddedAlignment / 16 < kPowerOfTwoOffset);
inline constexpr uint64_t kSizeMask = (uint64_t{1} << 56) - 1;
// Largest request leakwrap forwards; glibc refuses anything above PTRDIFF_MAX too.
inline constexpr std::size_t kMaxRequest = PTRDIFF_MAX;

constexpr bool is_power_of_two(std::size_t x) { return x != 0 && (x & (x - 1)) == 0; }

constexpr unsigned log2_of_power_of_two(std::size_t x) { return static_cast<unsigned>(__builtin_ctzll(x)); }

// Smallest power of two >= x (x >= 1, x <= 2^63).
constexpr std::size_t round_up_to_power_of_two(std::size_t x) {
    return x <= 1 ? 1 : std::size_t{1} << (64 - __builtin_clzll(x - 1));
}

// The most bytes between raw and user for a block of the given (power-of-two) alignment, which
// the real block is that much larger for: the header needs 16 bytes, and user must be aligned.
constexpr std::size_t max_raw_offset_for(std::size_t alignment) {
    return alignment <= kNaturalAlignment ? kNaturalAlignment : alignment;
}

// Where user goes in a plain or padded block (alignment up to kMaxPaddedAlignment) whose real
// block, 16-aligned, starts at raw: the first address aligned to `alignment` at least 16 bytes in.
inline std::size_t raw_offset_in_padded_block(const void* raw, std::size_t alignment) {
    if (alignment <= kNaturalAlignment) return kNaturalAlignment;  // raw is 16-aligned already
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    return ((start + kHeaderSize + alignment - 1) & ~(alignment - 1)) - start;
}

inline uint32_t tag_for(const void* user, uint64_t secret) {
    uint64_t mixed = (reinterpret_cast<uintptr_t>(user) ^ secret) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(mixed >> 32) | 0x80000000u;
}

inline BlockHeader* header_of(void* user) {
    return reinterpret_cast<BlockHeader*>(static_cast<char*>(user) - kHeaderSize);
}

inline bool tag_matches(void* user, uint64_t secret) { return header_of(user)->tag == tag_for(user, secret); }

// The bit every tag sets and no glibc chunk-size word has: false says at once that the block has
// no header (under glibc, whose blocks are always preceded by 16 readable bytes).
inline bool has_tag_bit(void* user) { return (header_of(user)->tag & 0x80000000u) != 0; }

inline std::size_t requested_size(const BlockHeader* h) { return h->size_and_shift & kSizeMask; }

inline std::size_t raw_offset(const BlockHeader* h) {
    const uint64_t code = h->size_and_shift >> 56;
    return code >= kPowerOfTwoOffset ? std::size_t{1} << (code - kPowerOfTwoOffset) : code * 16;
}

inline void* raw_of(void* user) { return static_cast<char*>(user) - raw_offset(header_of(user)); }

// Writes the header for a block whose real allocation starts at raw, user `offset` bytes into it
// (a multiple of 16 up to kMaxPaddedAlignment, or a larger power of two); returns the user pointer.
inline void* stamp_block(void* raw, std::size_t offset, std::size_t size, uint32_t site, uint64_t secret) {
    void* user = static_cast<char*>(raw) + offset;
    BlockHeader* h = header_of(user);
    const uint64_t code =
        offset <= kMaxPaddedAlignment ? offset / 16 : kPowerOfTwoOffset + log2_of_power_of_two(offset);
    h->size_and_shift = (code << 56) | (size & kSizeMask);
    h->site = site;
    h->tag = tag_for(user, secret);
    return user;
}

}  // namespace leakwrap
