// The per-block header arithmetic of libleakwrap.so: offsets, alignment, tags, size packing.
#include "block_header.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace leakwrap {
namespace {

constexpr uint64_t kSecret = 0x0123456789abcdefull;

TEST(BlockHeader, PowerOfTwoHelpers) {
    EXPECT_FALSE(is_power_of_two(0));
    EXPECT_TRUE(is_power_of_two(1));
    EXPECT_TRUE(is_power_of_two(4096));
    EXPECT_FALSE(is_power_of_two(24));
    EXPECT_EQ(round_up_to_power_of_two(1), 1u);
    EXPECT_EQ(round_up_to_power_of_two(3), 4u);
    EXPECT_EQ(round_up_to_power_of_two(24), 32u);
    EXPECT_EQ(round_up_to_power_of_two(4096), 4096u);
    EXPECT_EQ(round_up_to_power_of_two(4097), 8192u);
    EXPECT_EQ(log2_of_power_of_two(16), 4u);
    EXPECT_EQ(log2_of_power_of_two(std::size_t{1} << 40), 40u);
}

TEST(BlockHeader, OffsetKeepsUserPointerAligned) {
    EXPECT_EQ(max_raw_offset_for(1), 16u);
    EXPECT_EQ(max_raw_offset_for(8), 16u);
    EXPECT_EQ(max_raw_offset_for(16), 16u);
    EXPECT_EQ(max_raw_offset_for(32), 32u);
    EXPECT_EQ(max_raw_offset_for(65536), 65536u);
    // Every 16-aligned start of a padded block: user aligned, the header inside, and the block,
    // max_raw_offset_for(alignment) bytes larger than asked, long enough.
    for (std::size_t alignment = 1; alignment <= kMaxPaddedAlignment; alignment <<= 1) {
        for (uintptr_t start = 0x10000; start < 0x10000 + 2 * kMaxPaddedAlignment; start += 16) {
            const std::size_t offset = raw_offset_in_padded_block(reinterpret_cast<void*>(start), alignment);
            EXPECT_GE(offset, kHeaderSize);
            EXPECT_LE(offset, max_raw_offset_for(alignment));
            EXPECT_EQ(offset % 16, 0u);
            EXPECT_EQ((start + offset) % std::max(alignment, kNaturalAlignment), 0u) << alignment << " " << start;
        }
    }
}

TEST(BlockHeader, StampRoundTripsSizeSiteAndRaw) {
    // Padded blocks, where user lies anywhere from 16 to the alignment into the real block, and
    // blocks from the real memalign, where it lies a power of two of 4096 or more into it.
    for (std::size_t alignment :
         {std::size_t{16}, std::size_t{64}, std::size_t{2048}, std::size_t{4096}, std::size_t{1} << 20}) {
        const std::size_t padding = max_raw_offset_for(alignment);
        const std::size_t real_alignment = alignment <= kMaxPaddedAlignment ? kNaturalAlignment : alignment;
        // aligned_alloc wants a size that is a multiple of the alignment (ASan enforces it).
        const std::size_t size = (padding + 1000 + real_alignment - 1) / real_alignment * real_alignment;
        for (std::size_t shift = 0; shift < padding && shift <= kMaxPaddedAlignment; shift += 16) {
            char* block = static_cast<char*>(std::aligned_alloc(real_alignment, size + shift));
            ASSERT_NE(block, nullptr);
            void* raw = block + shift;  // as if the real allocator had returned this address
            const std::size_t offset =
                alignment <= kMaxPaddedAlignment ? raw_offset_in_padded_block(raw, alignment) : padding;
            void* user = stamp_block(raw, offset, 777, 4242, kSecret);
            EXPECT_EQ(reinterpret_cast<uintptr_t>(user) % alignment, 0u);
            EXPECT_TRUE(tag_matches(user, kSecret));
            EXPECT_FALSE(tag_matches(user, kSecret ^ 1)) << "another process's secret must not match";
            EXPECT_EQ(requested_size(header_of(user)), 777u);
            EXPECT_EQ(header_of(user)->site, 4242u);
            EXPECT_EQ(raw_offset(header_of(user)), offset);
            EXPECT_EQ(raw_of(user), raw);
            std::free(block);
            if (alignment > kMaxPaddedAlignment) break;  // one memalign block is enough
        }
    }
}

TEST(BlockHeader, LargestTrackableSizeSurvivesPacking) {
    alignas(16) unsigned char storage[64];
    void* user = stamp_block(storage, 16, kSizeMask, 1, kSecret);
    EXPECT_EQ(requested_size(header_of(user)), kSizeMask);
    EXPECT_EQ(raw_offset(header_of(user)), 16u);
}

// A block from the real allocator has glibc's chunk header where leakwrap's would be: its
// size word never has bit 63 set, so it can never be mistaken for a tracked block.
TEST(BlockHeader, GlibcBlocksNeverMatchTheTag) {
    std::vector<void*> blocks;
    for (std::size_t size = 1; size < 300000; size = size * 3 + 1) {
        void* p = std::malloc(size);
        ASSERT_NE(p, nullptr);
        EXPECT_FALSE(tag_matches(p, kSecret)) << "size " << size;
        blocks.push_back(p);
    }
    for (void* p : blocks) std::free(p);
}

TEST(BlockHeader, TagHasHighBitAndDependsOnAddress) {
    alignas(16) unsigned char storage[64];
    uint32_t a = tag_for(storage + 16, kSecret);
    uint32_t b = tag_for(storage + 32, kSecret);
    EXPECT_NE(a & 0x80000000u, 0u);
    EXPECT_NE(a, b);
}

}  // namespace
}  // namespace leakwrap
