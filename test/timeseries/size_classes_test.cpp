// The size-class bins of a real report count blocks exactly, on both sides of class boundaries.
#include <gtest/gtest.h>

#include <map>

#include "harness.h"
#include "size_class_boundaries.h"

#include <leakwrap/segment_layout.h>

namespace leakwrap::e2e {
namespace {

using namespace size_class_boundaries;

struct Expected {
    uint64_t blocks = 0;
    uint64_t bytes = 0;
};

TEST(SizeClasses, BinsCountEachSizeInItsClassExactly) {
    // By class limit, written out rather than derived, so that the layout's arithmetic is checked.
    const std::map<uint64_t, std::vector<std::size_t>> sizes_by_limit = {
        {8, {8}},     {16, {9, 16}}, {32, {17}},   {128, {128}},           {160, {129, 160}},
        {192, {161}}, {320, {320}},  {384, {321}}, {4 * kMiB, {4 * kMiB}}, {8 * kMiB, {4 * kMiB + 1}},
    };
    std::size_t listed = 0;
    for (const auto& [limit, sizes] : sizes_by_limit) listed += sizes.size();
    ASSERT_EQ(listed, kSizes.size());

    Target target({paths::program("size_class_boundaries")}, Environment::profiled());
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(target.release_and_wait(), 0);

    std::map<uint64_t, const nlohmann::json*> bins_by_limit;
    for (const auto& bin : report.at("bins"))
        if (!bin.at("limit").is_null()) bins_by_limit[bin.at("limit").get<uint64_t>()] = &bin;
    for (const auto& [limit, sizes] : sizes_by_limit) {
        Expected expected;
        for (const std::size_t size : sizes) {
            expected.blocks += kBlocksPerSize;
            expected.bytes += kBlocksPerSize * size;
        }
        ASSERT_TRUE(bins_by_limit.contains(limit)) << "no bin with limit " << limit;
        const nlohmann::json& bin = *bins_by_limit[limit];
        EXPECT_EQ(bin.at("class"), layout::size_class_of(limit)) << "limit " << limit;
        EXPECT_EQ(bin.at("allocs"), expected.blocks) << "limit " << limit;
        EXPECT_EQ(bin.at("live_blocks"), expected.blocks) << "limit " << limit;
        EXPECT_EQ(bin.at("live_bytes"), expected.bytes) << "limit " << limit;
    }
}

}  // namespace
}  // namespace leakwrap::e2e
