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

}  // namespace
}  // namespace leakwrap::e2e
