// The /proc/PID/stat parser both sides share (include/leakwrap/process_stat.h): the preload
// writes the start time it parses into the segment, the reader compares what it parses with it.
#include "leakwrap/process_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace leakwrap::proc {
namespace {

// Fields 3 to 52 of a real line; field 22 (the start time) is 8254613.
constexpr const char* kAfterName =
    " S 1 1234 1234 0 -1 4194560 4011 0 0 0 12 3 0 0 20 0 1 0 8254613 24961024 1162 "
    "18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

std::string stat_line(const std::string& name) { return "4242 (" + name + ")" + kAfterName; }

TEST(ProcStat, ReadsTheStateAndTheStartTime) {
    StatFields fields{};
    ASSERT_TRUE(parse_stat(stat_line("sleep"), &fields));
    EXPECT_EQ(fields.state, 'S');
    EXPECT_EQ(fields.start_time_ticks, 8254613u);
}

TEST(ProcStat, CountsFieldsFromTheLastParenthesisOfTheName) {
    // A command name may hold spaces and ") ": a program can name itself anything.
    StatFields fields{};
    ASSERT_TRUE(parse_stat(stat_line("a) R 1 2 3 (b"), &fields));
    EXPECT_EQ(fields.state, 'S');
    EXPECT_EQ(fields.start_time_ticks, 8254613u);
}

TEST(ProcStat, RefusesALineCutShortOrAStartTimeThatIsNoNumber) {
    StatFields fields{'?', 7};
    const std::string line = stat_line("sleep");
    EXPECT_FALSE(parse_stat(line.substr(0, line.find(" 8254613")), &fields));
    EXPECT_FALSE(parse_stat("4242 sleep S 1", &fields));
    EXPECT_FALSE(parse_stat("", &fields));
    std::string letters = line;
    letters.replace(letters.find("8254613"), 7, "82x4613");
    EXPECT_FALSE(parse_stat(letters, &fields));
    std::string too_large = line;
    too_large.replace(too_large.find("8254613"), 7, "18446744073709551616");
    EXPECT_FALSE(parse_stat(too_large, &fields));
    EXPECT_EQ(fields.state, '?');  // untouched on failure
    EXPECT_EQ(fields.start_time_ticks, 7u);
    static_assert([] {
        StatFields parsed{};
        return parse_stat("1 (x) Z 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 42 0", &parsed) && parsed.state == 'Z' &&
               parsed.start_time_ticks == 42;
    }());
}

TEST(ProcStat, ParsesThisProcesssOwnLine) {
    std::ifstream file("/proc/self/stat");
    const std::string line{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    StatFields fields{};
    ASSERT_TRUE(parse_stat(line, &fields)) << line;
    EXPECT_EQ(fields.state, 'R');  // the thread reading it runs
    EXPECT_GT(fields.start_time_ticks, 0u);
}

TEST(ProcStat, BootIdAndCommandLinesLoseTheirTrailingSpace) {
    static_assert(without_trailing_space("8a1c\n") == "8a1c");
    static_assert(without_trailing_space(std::string_view("8a1c\0\0", 6)) == "8a1c");
    static_assert(without_trailing_space("ruby app.rb  ") == "ruby app.rb");
    static_assert(without_trailing_space(" \n").empty());
    EXPECT_EQ(without_trailing_space(" x y "), " x y");
}

}  // namespace
}  // namespace leakwrap::proc
