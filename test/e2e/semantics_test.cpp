// The preload keeps every glibc allocator behaviour the semantics program checks.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

constexpr std::string_view kAllHold = "all allocator semantics hold\n";

TEST(Semantics, HoldWithoutThePreload) {
    const Completed bare = run({paths::program("semantics")}, Environment::bare());
    EXPECT_EQ(bare.exit_code, 0) << bare.err;
    EXPECT_EQ(bare.out, kAllHold);
}

TEST(Semantics, HoldUnderThePreload) {
    const Completed profiled = run({paths::program("semantics")}, Environment::profiled());
    EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
    EXPECT_EQ(profiled.out, kAllHold);
}

TEST(Semantics, HoldUnderThePreloadWithOneFrameStacksAndATinySiteTable) {
    const Completed profiled = run({paths::program("semantics")},
                                   Environment::profiled().set("LEAKWRAP_DEPTH", "1").set("LEAKWRAP_MAX_SITES", "2"));
    EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
    EXPECT_EQ(profiled.out, kAllHold);
}

// Sampling mode's bare unsampled blocks beside sampled ones with headers: every 64 bytes
// sampled on average (most blocks of a few hundred bytes are, small ones mostly not), and nearly
// none.
class SemanticsSampled : public ::testing::TestWithParam<const char*> {};

TEST_P(SemanticsSampled, HoldWithSampledAndUnsampledBlocksMixed) {
    const Completed profiled =
        run({paths::program("semantics")}, Environment::profiled().set("LEAKWRAP_SAMPLE", GetParam()));
    EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
    EXPECT_EQ(profiled.out, kAllHold);
}

INSTANTIATE_TEST_SUITE_P(Intervals, SemanticsSampled, ::testing::Values("64", "1099511627776"));

}  // namespace
}  // namespace leakwrap::e2e
