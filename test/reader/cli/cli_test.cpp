// The real leakwrap-report binary, end to end on builder-made segment files.
#include "segment_builder.h"
#include "temporary_directory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace leakwrap {
namespace {

using testing::SegmentBuilder;
using testing::write_file;

struct Completed {
    int exit_code;
    std::string out;
    std::string err;
};

std::string read_all(const std::filesystem::path& path) {
    std::ifstream file(path);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

class CliTest : public ::testing::Test {
protected:
    // Arguments are test-made and free of shell metacharacters.
    Completed run_report(const std::string& arguments) {
        return run_shell(std::string(LEAKWRAP_REPORT_BINARY) + " " + arguments);
    }

    Completed run_shell(const std::string& command_line) {
        const auto out = directory_.path() / "stdout";
        const auto err = directory_.path() / "stderr";
        const std::string command = command_line + " >" + out.string() + " 2>" + err.string() + " </dev/null";
        const int status = std::system(command.c_str());
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_all(out), read_all(err)};
    }

    std::filesystem::path file_with(const std::vector<std::byte>& bytes) {
        const auto path = directory_.path() / "segment";
        write_file(path, bytes);
        return path;
    }

    static void expect_one_line_error(const Completed& result, int exit_code) {
        EXPECT_EQ(result.exit_code, exit_code) << result.err;
        EXPECT_TRUE(result.err.starts_with("leakwrap-report: error: ")) << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
        EXPECT_EQ(result.out, "");
    }

    TemporaryDirectory directory_;
};

TEST_F(CliTest, RejectsACorruptSegmentWithOneErrorLine) {
    auto bytes = SegmentBuilder().build();
    testing::patch_header(bytes, [](layout::Header& h) { h.layout_version = layout::kLayoutVersion + 1; });
    const auto result = run_report("--segment " + file_with(bytes).string());
    expect_one_line_error(result, 1);
    EXPECT_NE(result.err.find("segment layout version " + std::to_string(layout::kLayoutVersion + 1) +
                              ", this reader understands " + std::to_string(layout::kLayoutVersion)),
              std::string::npos);
}

TEST_F(CliTest, ReportsAValidSegmentAsJson) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 4, .frees = 1, .alloc_bytes = 4096, .free_bytes = 1024, .frames = {0x401000}}};
    const auto result = run_report("--segment " + file_with(builder.build()).string() + " --format json --top 0");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto report = nlohmann::json::parse(result.out);
    EXPECT_EQ(report["pid"], testing::kAbsentPid);
    EXPECT_EQ(report["state"], "dead");
    EXPECT_EQ(report["by"], "native");
    EXPECT_EQ(report["totals"]["live_bytes"], 3072);
    EXPECT_EQ(report["totals"]["live_blocks"], 3);
    EXPECT_EQ(report["totals"]["sites"], 1);
    ASSERT_EQ(report["sites"].size(), 1u);  // no overflow row: nothing overflowed
    EXPECT_EQ(report["sites"][0]["id"], testing::kFirstSiteSlot);
    EXPECT_EQ(report["sites"][0]["frames"][0]["addr"], "0x401000");
    EXPECT_EQ(report["bins"].size(), 1u);
}

TEST_F(CliTest, GroupsByRubyLocationAndShowsTheSizeClassTable) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 2, .alloc_bytes = 64, .frames = {0x1}, .ruby_file = "a.rb", .ruby_line = 5},
                     {.allocs = 3, .alloc_bytes = 96, .frames = {0x2}, .ruby_file = "a.rb", .ruby_line = 5}};
    const auto path = file_with(builder.build()).string();

    const auto by_ruby = run_report("--segment " + path + " --by ruby");
    ASSERT_EQ(by_ruby.exit_code, 0) << by_ruby.err;
    EXPECT_NE(by_ruby.out.find("#1 ruby a.rb:5: 160 B live in 5 blocks"), std::string::npos) << by_ruby.out;

    const auto bins = run_report("--segment " + path + " --bins --format csv");
    ASSERT_EQ(bins.exit_code, 0) << bins.err;
    EXPECT_EQ(bins.out,
              "class,limit,allocs,frees,live_blocks,live_bytes,top_sites,top_sites_summary\n"
              "2,32,5,0,5,160,89;88,??  ruby: a.rb:5;??  ruby: a.rb:5\n");
}

TEST_F(CliTest, ExplainsAMissingSegment) {
    const auto absent = run_report(std::to_string(testing::kAbsentPid));
    expect_one_line_error(absent, 1);
    EXPECT_NE(absent.err.find("no process 2147483000 and no segment /dev/shm/leakwrap.2147483000 "
                              "left behind"),
              std::string::npos);

    const auto unprofiled = run_report(std::to_string(::getpid()));
    expect_one_line_error(unprofiled, 1);
    EXPECT_NE(unprofiled.err.find("has no leakwrap segment (was it started with "
                                  "LD_PRELOAD=libleakwrap.so? LEAKWRAP_DISABLE set?)"),
              std::string::npos);
}

TEST_F(CliTest, RejectsBadUsageWithExitCodeTwo) {
    for (const char* arguments : {"", "--format yaml 1", "--sort nowhere 1", "--by stack 1", "--top many 1",
                                  "--top -1 1", "0", "1 --list", "--segment a --clean", "--no-such-option"})
        expect_one_line_error(run_report(arguments), 2);
}

TEST_F(CliTest, NamesTheOptionOrSubcommandATypoMeantOrGivenTwice) {
    for (const auto& [arguments, message] : std::vector<std::pair<std::string, std::string>>{
             {"--formt json 1", "unknown option --formt; did you mean --format?"},
             {"1 --bin", "unknown option --bin; did you mean --bins?"},
             {"wacth 1", "unknown subcommand wacth; did you mean watch?"},
             {"watch --intervall 5s --out x 1", "unknown option --intervall; did you mean --interval?"},
             {"1 --xyzzy", "unknown option --xyzzy"},
             {"1 --top 3 --top 4", "--top is given more than once; it takes one value"}}) {
        const auto result = run_report(arguments);
        expect_one_line_error(result, 2);
        EXPECT_EQ(result.err, "leakwrap-report: error: " + message + " (see --help)\n") << arguments;
    }
}

// pprof is gzipped protobuf: on a terminal it is noise and may send control sequences. The
// terminal is a real one, `script`'s pseudo-terminal, as stdout and as -o /dev/tty.
TEST_F(CliTest, RefusesToWritePprofToATerminal) {
    if (!std::filesystem::exists("/usr/bin/script")) GTEST_SKIP() << "no script (util-linux)";
    const std::string segment = file_with(SegmentBuilder().build()).string();
    for (const std::string output : {"", " -o /dev/tty"}) {
        const auto result = run_shell("/usr/bin/script -qec '" + std::string(LEAKWRAP_REPORT_BINARY) + " --segment " +
                                      segment + " --format pprof" + output + "' /dev/null");
        EXPECT_EQ(result.exit_code, 2) << output << ": " << result.out << result.err;
        EXPECT_NE(result.out.find("pprof output is binary"), std::string::npos) << result.out;
    }
}

TEST_F(CliTest, DocumentsEveryOptionWithItsDefault) {
    const auto help = run_report("--help");
    EXPECT_EQ(help.exit_code, 0);
    for (const char* text :
         {"--segment", "--top", "(default: 20)", "--sort", "(default: live)", "--format", "(default: text)", "--by",
          "(default: native)", "--bins", "(default: off)", "--list", "COMMAND", "--clean", "--version"})
        EXPECT_NE(help.out.find(text), std::string::npos) << text;
    EXPECT_EQ(run_report("--version").out, "leakwrap-report " LEAKWRAP_VERSION_FOR_TESTS "\n");
}

}  // namespace
}  // namespace leakwrap
