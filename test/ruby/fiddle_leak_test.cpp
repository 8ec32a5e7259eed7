// examples/ruby/fiddle_leak.rb leaks what its README promises, on the line its README names.
#include <gtest/gtest.h>

#include <regex>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kAllocations = 10'000;
constexpr long long kForgotten = kAllocations / 2;  // the example frees every other buffer
constexpr long long kBufferSize = 1024;
// Ruby's own allocations on the Fiddle.malloc line share its row: the 80 KB array of addresses
// (freed by the GC before the snapshot) and a handful of small blocks for the block and the
// method calls. 50 blocks bound them with room to spare.
constexpr long long kRubyOwnBlocksOnTheLine = 50;

struct MemoryLine {
    long long rss_kib;
    long long ruby_objects_kib;
};

// Parses "before RSS <n> KiB   ObjectSpace.memsize_of_all <m> KiB" (or "after").
MemoryLine memory_line(const std::vector<std::string>& output, const std::string& label) {
    const std::regex pattern(label + R"(\s+RSS\s+(\d+) KiB\s+ObjectSpace\.memsize_of_all\s+(\d+) KiB)");
    for (const auto& line : output) {
        std::smatch match;
        if (std::regex_search(line, match, pattern)) return {std::stoll(match[1]), std::stoll(match[2])};
    }
    throw std::runtime_error("fiddle_leak.rb printed no '" + label + "' memory line");
}

TEST(RubyFiddleLeak, TheFiddleMallocLineHoldsTheForgottenBuffersThatRubyCannotSee) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    const std::string script = paths::source("examples/ruby/fiddle_leak.rb");
    const int malloc_line = line_containing(script, "Fiddle.malloc(");

    Target target({paths::ruby, script, std::to_string(kAllocations), "--wait-enter"}, Environment::profiled());
    const std::vector<std::string> output = target.wait_ready(" ready");
    const nlohmann::json report = report_json(target.pid(), {"--by", "ruby"});

    const Counters line = counters_at_ruby_line(report, script, malloc_line);
    EXPECT_GE(line.live_blocks, kForgotten);
    EXPECT_LE(line.live_blocks, kForgotten + kRubyOwnBlocksOnTheLine);
    EXPECT_GE(line.live_bytes, kForgotten * kBufferSize);
    EXPECT_GE(line.allocs, kAllocations);

    // What the example demonstrates: the process grows by at least the forgotten buffers, while
    // Ruby's own accounting of its objects stays put (it moves by a few KiB).
    const MemoryLine before = memory_line(output, "before");
    const MemoryLine after = memory_line(output, "after");
    EXPECT_GE(after.rss_kib - before.rss_kib, kForgotten * kBufferSize / 1024);
    EXPECT_LT(after.ruby_objects_kib - before.ruby_objects_kib, 1024);

    EXPECT_EQ(target.release_and_wait(), 0);
}

// Under --by ruby a row is a Ruby line, and a focus on a native module keeps of each line the
// allocations whose stacks went through it: of the Fiddle.malloc line, exactly the buffers,
// without Ruby's own blocks that share the line.
TEST(RubyFiddleLeak, AFocusOnFiddleKeepsExactlyItsBuffersOnTheRubyLine) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    const std::string script = paths::source("examples/ruby/fiddle_leak.rb");
    const int malloc_line = line_containing(script, "Fiddle.malloc(");

    Target target({paths::ruby, script, std::to_string(kAllocations), "--wait-enter"}, Environment::profiled());
    target.wait_ready(" ready");
    const nlohmann::json unfocused = report_json(target.pid(), {"--by", "ruby"});
    const nlohmann::json focused = report_json(target.pid(), {"--by", "ruby", "--focus", "/fiddle\\.so$"});

    EXPECT_EQ(counters_at_ruby_line(focused, script, malloc_line),
              (Counters{kForgotten, kForgotten * kBufferSize, kAllocations, kAllocations - kForgotten}));
    // Ruby's own blocks on the line were left out, not lost: the line holds them unfocused.
    EXPECT_GT(counters_at_ruby_line(unfocused, script, malloc_line).allocs, kAllocations);
    const auto& selection = focused.at("selection");
    EXPECT_LT(selection.at("rows").get<long long>(), selection.at("all_rows").get<long long>());
    for (const auto& row : focused.at("sites")) EXPECT_FALSE(without_ruby_location(row)) << row.dump(2);

    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
