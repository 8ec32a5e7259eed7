// LEAKWRAP_* settings as the preload reads them at start-up (preload/base/config.cpp): defaults when
// unset, values within their documented bounds taken, anything else ignored with the default
// kept, so that a typo never stops the host program.
#include "config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

namespace leakwrap {
namespace {

const std::vector<std::string> kSettings = {"LEAKWRAP_DEPTH",     "LEAKWRAP_RUBY_DEPTH",    "LEAKWRAP_MAX_SITES",
                                            "LEAKWRAP_SAMPLE",    "LEAKWRAP_KEEP",          "LEAKWRAP_DISABLE",
                                            "LEAKWRAP_KEEP_DEAD", "LEAKWRAP_KEEP_DEAD_DAYS"};

class PreloadConfig : public ::testing::Test {
protected:
    void SetUp() override {
        for (const auto& name : kSettings) unsetenv(name.c_str());
    }
    void TearDown() override { SetUp(); }
    static Config with(const char* name, const char* value) {
        setenv(name, value, 1);
        Config config = read_config();
        unsetenv(name);
        return config;
    }
};

TEST_F(PreloadConfig, DefaultsWhenNothingIsSet) {
    const Config config = read_config();
    EXPECT_EQ(config.depth, 16u);
    EXPECT_EQ(config.ruby_depth, 8u);
    EXPECT_EQ(config.max_sites, 16'777'216u);
    EXPECT_EQ(config.sample_interval, 0u);
    EXPECT_FALSE(config.keep);
    EXPECT_FALSE(config.disable);
    EXPECT_EQ(config.keep_dead, 8u);
    EXPECT_EQ(config.keep_dead_days, 7u);
}

TEST_F(PreloadConfig, ValuesWithinTheirBoundsAreTaken) {
    EXPECT_EQ(with("LEAKWRAP_DEPTH", "1").depth, 1u);
    EXPECT_EQ(with("LEAKWRAP_DEPTH", "64").depth, 64u);
    EXPECT_EQ(with("LEAKWRAP_RUBY_DEPTH", "0").ruby_depth, 0u);
    EXPECT_EQ(with("LEAKWRAP_RUBY_DEPTH", "64").ruby_depth, 64u);
    EXPECT_EQ(with("LEAKWRAP_MAX_SITES", "89").max_sites, 89u);
    EXPECT_EQ(with("LEAKWRAP_MAX_SITES", "67108864").max_sites, 67'108'864u);
    EXPECT_EQ(with("LEAKWRAP_SAMPLE", "524288").sample_interval, 524'288u);
    EXPECT_TRUE(with("LEAKWRAP_KEEP", "1").keep);
    EXPECT_TRUE(with("LEAKWRAP_DISABLE", "1").disable);
    EXPECT_FALSE(with("LEAKWRAP_KEEP", "0").keep);
    EXPECT_EQ(with("LEAKWRAP_KEEP_DEAD", "0").keep_dead, 0u);
    EXPECT_EQ(with("LEAKWRAP_KEEP_DEAD", "1024").keep_dead, 1024u);
    EXPECT_EQ(with("LEAKWRAP_KEEP_DEAD_DAYS", "0").keep_dead_days, 0u);
}

TEST_F(PreloadConfig, AnythingElseKeepsTheDefault) {
    for (const char* value : {"0", "65", "-1", "12x", "x", "99999999999999999999999"})
        EXPECT_EQ(with("LEAKWRAP_DEPTH", value).depth, 16u) << value;
    for (const char* value : {"65", "-0", "8.5"}) EXPECT_EQ(with("LEAKWRAP_RUBY_DEPTH", value).ruby_depth, 8u) << value;
    for (const char* value : {"88", "67108865", "1e6"})
        EXPECT_EQ(with("LEAKWRAP_MAX_SITES", value).max_sites, 16'777'216u) << value;
    EXPECT_EQ(with("LEAKWRAP_SAMPLE", "1099511627777").sample_interval, 0u);
    for (const char* value : {"2", "yes", "true"}) EXPECT_FALSE(with("LEAKWRAP_KEEP", value).keep) << value;
    EXPECT_EQ(with("LEAKWRAP_DEPTH", "").depth, 16u);
    EXPECT_EQ(with("LEAKWRAP_KEEP_DEAD", "1025").keep_dead, 8u);
    EXPECT_EQ(with("LEAKWRAP_KEEP_DEAD_DAYS", "36501").keep_dead_days, 7u);
}

TEST_F(PreloadConfig, AnIgnoredValueIsReportedInOneLine) {
    ::testing::internal::CaptureStderr();
    with("LEAKWRAP_DEPTH", "100");
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("ignoring LEAKWRAP_DEPTH=100 (expected a whole number from 1 to 64); using 16"),
              std::string::npos)
        << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1);
}

}  // namespace
}  // namespace leakwrap
