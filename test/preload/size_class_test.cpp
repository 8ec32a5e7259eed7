// The size classes of the bins and of every site (include/leakwrap/segment_layout.h): each size
// falls in exactly one class, whose limit is the smallest that holds it.
#include <gtest/gtest.h>

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap::layout {
namespace {

TEST(SizeClasses, EightyEightClassesWithRisingLimitsTheLastUnbounded) {
    EXPECT_EQ(kSizeClassCount, 88u);
    for (uint32_t size_class = 1; size_class < kSizeClassCount; ++size_class)
        EXPECT_GT(size_class_limit(size_class), size_class_limit(size_class - 1)) << size_class;
    EXPECT_EQ(size_class_limit(kSizeClassCount - 1), UINT64_MAX);
    EXPECT_EQ(size_class_limit(kSizeClassCount - 2), uint64_t{1} << 40);
}

TEST(SizeClasses, EachLimitIsTheLargestSizeOfItsClass) {
    for (uint32_t size_class = 0; size_class + 1 < kSizeClassCount; ++size_class) {
        const uint64_t limit = size_class_limit(size_class);
        EXPECT_EQ(size_class_of(limit), size_class) << limit;
        EXPECT_EQ(size_class_of(limit + 1), size_class + 1) << limit + 1;
    }
}

TEST(SizeClasses, EverySmallSizeIsInTheSmallestClassThatHoldsIt) {
    for (uint64_t size = 0; size <= (uint64_t{1} << 20); ++size) {
        const uint32_t size_class = size_class_of(size);
        ASSERT_LT(size_class, kSizeClassCount) << size;
        ASSERT_GE(size_class_limit(size_class), size) << size;
        if (size_class > 0) {
            ASSERT_LT(size_class_limit(size_class - 1), size) << size;
        }
    }
}

TEST(SizeClasses, TheDocumentedBoundaries) {
    // README: 8, 16, 32, ..., 128, then four classes per doubling; "≤320" holds 257 to 320.
    EXPECT_EQ(size_class_of(0), 0u);
    EXPECT_EQ(size_class_limit(size_class_of(17)), 32u);
    EXPECT_EQ(size_class_limit(size_class_of(129)), 160u);
    EXPECT_EQ(size_class_of(257), size_class_of(320));
    EXPECT_NE(size_class_of(256), size_class_of(257));
    EXPECT_EQ(size_class_limit(size_class_of(uint64_t{4} << 20)), uint64_t{4} << 20);
    EXPECT_EQ(size_class_limit(size_class_of((uint64_t{4} << 20) + 1)), uint64_t{8} << 20);
    EXPECT_EQ(size_class_of((uint64_t{1} << 40) + 1), kSizeClassCount - 1);
    EXPECT_EQ(size_class_of(UINT64_MAX), kSizeClassCount - 1);
}

}  // namespace
}  // namespace leakwrap::layout
