// Ruby backtraces are exact: each allocation is counted under the backtrace that made it, however
// often the same method is reached from other lines, through C methods and blocks or directly.
// The VM's own allocations made with no backtrace keep a short native stack.
// Most backtraces are found again by a fingerprint of the VM's control frames instead of being
// asked of Ruby (preload/ruby/ruby_vm_frames.h); a fingerprint that confused two backtraces would put
// one caller's strings, told apart here by their sizes, under another's line.
#include <gtest/gtest.h>

#include <map>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kRounds = 300;
constexpr long long kLargestVmBlock = 8192;  // the strings are all larger

struct Caller {
    const char* text;       // what the caller's line says
    long long string_size;  // of the strings it makes: a buffer of size + 1
    long long calls;        // in kRounds rounds
};

const Caller kCallers[] = {
    {"make(10_000) # direct, every round", 10'000, kRounds},
    {"make(20_000) if i.even?", 20'000, kRounds / 2},
    {"nested(30_000) # nested, every round", 30'000, kRounds},
    {"nested(40_000) if (i % 3).zero?", 40'000, kRounds / 3},
};

TEST(RubyBacktraces, EveryStringIsCountedUnderTheCallerThatMadeIt) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    const std::string script = paths::source("test/ruby/programs/backtraces.rb");
    const int make_line = line_containing(script, "'x' * size");
    const int block_line = line_containing(script, "[1].each {");
    std::map<int, const Caller*> caller_at_line;
    for (const Caller& caller : kCallers) caller_at_line[line_containing(script, caller.text)] = &caller;

    Target target({paths::ruby, script, std::to_string(kRounds)}, Environment::profiled());
    target.wait_ready("READY", 60s);
    const nlohmann::json report = report_json(target.pid());

    std::map<int, long long> allocs_by_caller;
    for (const auto& row : report.at("sites")) {
        const auto& frames = row.at("ruby_frames");
        if (frames.empty() || frames[0].at("file") != script || frames[0].at("line") != make_line) continue;
        // The innermost frame of the loop is the caller; a nested call passes the block first.
        const Caller* caller = nullptr;
        int caller_line = 0;
        for (const auto& frame : frames) {
            if (frame.at("file") != script) continue;
            const int line = frame.at("line").get<int>();
            if (auto found = caller_at_line.find(line); found != caller_at_line.end()) {
                caller = found->second;
                caller_line = line;
                break;
            }
            EXPECT_TRUE(line == make_line || line == block_line) << "an unexpected line: " << row.dump(2);
        }
        ASSERT_NE(caller, nullptr) << "no caller in the backtrace: " << row.dump(2);
        // The first call from a line also makes a few small blocks of the VM's (method caches):
        // only the strings are large. They are all kept.
        for (const auto& size_class : row.at("size_classes")) {
            if (size_class.at("limit").get<long long>() <= kLargestVmBlock) continue;
            const long long allocs = size_class.at("allocs").get<long long>();
            EXPECT_EQ(size_class.at("live_bytes").get<long long>(), allocs * (caller->string_size + 1))
                << "strings of another caller under line " << caller_line << ": " << row.dump(2);
            EXPECT_EQ(size_class.at("frees").get<long long>(), 0) << row.dump(2);
            allocs_by_caller[caller_line] += allocs;
        }
    }
    for (const auto& [line, caller] : caller_at_line)
        EXPECT_EQ(allocs_by_caller[line], caller->calls) << "strings made by line " << line;

    // What the VM allocates with no Ruby backtrace to say why (booting, thousands of blocks
    // through as many interpreter paths) keeps its three innermost frames, not a stack each.
    long long vm_rows_without_backtrace = 0;
    for (const auto& row : report.at("sites")) {
        const auto& frames = row.at("frames");
        if (!row.at("ruby_frames").empty() || frames.empty() || !frames[0].at("module").is_string() ||
            frames[0].at("module").get<std::string>().find("libruby") == std::string::npos)
            continue;
        ++vm_rows_without_backtrace;
        EXPECT_LE(frames.size(), 3u) << row.dump(2);
    }
    EXPECT_GT(vm_rows_without_backtrace, 0);

    EXPECT_EQ(target.release_and_wait(), 0);
}

// A backtrace that is new once the tables are nearly full is stored as its innermost frame alone,
// and the stack says so: the segment stays readable, and the leak is found under its line.
// The table has room for half as many records again as this Ruby's boot takes. The script's
// fillers bring it to nearly full (15/16) in steps the test sizes from the records claimed so
// far, which vary with the machine's speed (a site takes a record per birth cell), and the leak
// comes once it is: the reserve, a sixteenth, holds what the last step overshoots and the leak.
TEST(RubyBacktraces, ALeakThatStartsInANearlyFullTableKeepsItsLineInAReducedStack) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    constexpr long long kLeaked = 200;
    const std::string script = paths::source("test/ruby/programs/late_leak.rb");
    const int leak_line = line_containing(script, "# the leak's line");
    long long boot_records = 0;
    {
        Target target({paths::ruby, script}, Environment::profiled());
        target.wait_ready("BOOTED", 60s);
        boot_records = report_json(target.pid()).at("totals").at("sites").get<long long>();
        EXPECT_EQ(target.release_and_wait(), 0);
    }
    const long long capacity = boot_records * 3 / 2;
    const long long nearly_full = capacity - capacity / 16;  // preload/record/stack_table.h
    Target target({paths::ruby, script}, Environment::profiled().set("LEAKWRAP_MAX_SITES", std::to_string(capacity)));
    target.wait_ready("BOOTED", 60s);
    long long records = report_json(target.pid()).at("totals").at("sites").get<long long>();
    for (int step = 0; records <= nearly_full; ++step) {
        ASSERT_LT(step, 10) << "the fillers do not fill the table: " << records << " records of " << capacity;
        target.send_line("fill " + std::to_string(nearly_full - records + 1));
        target.wait_ready("FILLED", 60s);
        records = report_json(target.pid()).at("totals").at("sites").get<long long>();
    }
    target.send_line("leak " + std::to_string(kLeaked));
    target.wait_ready("READY", 60s);
    const Completed text = run_report({std::to_string(target.pid())});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(report.at("totals").at("lost_sites").get<long long>(), 0) << "the table filled up";
    long long leaked = 0;
    for (const auto& row : report.at("sites")) {
        const auto& frames = row.at("ruby_frames");
        if (frames.empty() || frames[0].at("file") != script || frames[0].at("line") != leak_line) continue;
        // The line also defines the method, at the top level: a whole backtrace of one frame.
        long long strings = 0;
        for (const auto& size_class : row.at("size_classes"))
            if (size_class.at("limit").get<long long>() > 4096)
                strings += size_class.at("live_blocks").get<long long>();
        if (strings == 0) continue;
        EXPECT_TRUE(row.at("reduced").get<bool>()) << row.dump(2);
        EXPECT_EQ(frames.size(), 1u) << row.dump(2);
        leaked += strings;
    }
    EXPECT_EQ(leaked, kLeaked);
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
