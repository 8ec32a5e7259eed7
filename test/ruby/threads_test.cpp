// Threads in Ruby: allocations made while holding the GVL carry the Ruby line that made them;
// allocations made without it (a C call that released the GVL, a native thread) carry none, and
// nothing crashes while Ruby threads block, allocate and run native code all at once.
#include <gtest/gtest.h>

#include <fstream>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kThreads = 4;  // THREADS in threads.rb
constexpr long long kRounds = 200;
constexpr long long kCalls = kThreads * kRounds;  // of each kind of work
constexpr long long kWithoutGvlSize = 3000, kWithGvlSize = 5000, kNativeThreadSize = 7000;
constexpr long long kStringCapacity = 2000 + 1;  // 'x' * 2000 and its terminator
// Besides the strings, the line that keeps them grows the queue's array now and then.
constexpr long long kQueueGrowthBlocks = 20;

bool innermost_frame_in(const nlohmann::json& row, std::string_view module_fragment) {
    const auto& frames = row.at("frames");
    if (frames.empty() || !frames[0].at("module").is_string()) return false;
    return frames[0].at("module").get<std::string_view>().find(module_fragment) != std::string_view::npos;
}

bool all_blocks_of_size(const nlohmann::json& row, long long size) {
    return row.at("alloc_bytes").get<long long>() == row.at("allocs").get<long long>() * size;
}

TEST(RubyThreads, OnlyAllocationsMadeHoldingTheGvlHaveARubyLocation) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    ASSERT_TRUE(std::ifstream(paths::extension_dir + "/native_thread.so").good())
        << "native_thread.so was not built: install ruby-dev (scripts/setup.sh) and reconfigure";
    const std::string script = paths::source("test/ruby/programs/threads.rb");
    const int with_gvl_line = line_containing(script, "malloc_with_gvl.call(");
    const int strings_line = line_containing(script, "kept_strings << ");

    Target target({paths::ruby, script, std::to_string(kRounds)}, profiled_with_extensions());
    target.wait_ready("READY", 60s);
    const nlohmann::json report = report_json(target.pid());

    // libc malloc called through Fiddle: libffi makes the call, so the innermost frame is libffi's.
    // Each row must be one of the two kinds, told apart by their block sizes.
    std::vector<nlohmann::json> without_gvl, with_gvl;
    for (const auto& row : report.at("sites")) {
        if (!innermost_frame_in(row, "libffi")) continue;
        if (all_blocks_of_size(row, kWithoutGvlSize)) {
            EXPECT_TRUE(without_ruby_location(row)) << "malloc'd without the GVL: " << row.dump(2);
            without_gvl.push_back(row);
        } else if (all_blocks_of_size(row, kWithGvlSize)) {
            EXPECT_TRUE(at_ruby_line(row, script, with_gvl_line)) << "malloc'd with the GVL: " << row.dump(2);
            with_gvl.push_back(row);
        } else {
            ADD_FAILURE() << "libffi called malloc with sizes threads.rb never asks for: " << row.dump(2);
        }
    }
    EXPECT_EQ(sum_of(without_gvl), (Counters{kCalls, kCalls * kWithoutGvlSize, kCalls, 0}));
    EXPECT_EQ(sum_of(with_gvl), (Counters{kCalls, kCalls * kWithGvlSize, kCalls, 0}));

    // The extension's native thread never ran Ruby.
    const std::vector<nlohmann::json> native =
        rows_allocated_by(report, "/native_thread.so", "allocate_in_native_thread");
    EXPECT_EQ(sum_of(native), (Counters{kCalls, kCalls * kNativeThreadSize, kCalls, 0}));
    for (const auto& row : native) EXPECT_TRUE(without_ruby_location(row)) << row.dump(2);

    // Plain Ruby work in threads is located at its line.
    const Counters strings = counters_at_ruby_line(report_json(target.pid(), {"--by", "ruby"}), script, strings_line);
    EXPECT_GE(strings.live_blocks, kCalls);
    EXPECT_LE(strings.live_blocks, kCalls + kQueueGrowthBlocks);
    EXPECT_GE(strings.live_bytes, kCalls * kStringCapacity);

    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
