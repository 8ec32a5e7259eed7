// A Ruby allocation site reads the same in the profile formats: in folded as the innermost frame
// ruby:file:line, in OpenMetrics as the ruby="file:line" label of its row, in pprof as the
// innermost location, so the top of go tool pprof -top. The script's name has a quote and a
// backslash, which OpenMetrics must escape, and angle brackets, as Ruby's own files have
// (<internal:…/kernel_require.rb>), which pprof must not take for C++ template arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "go_pprof.h"
#include "harness.h"
#include "openmetrics_parser.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

constexpr int kStrings = 2000, kStringBytes = 20000;

struct RubyProfiles {
    std::string script;  // the leaking line is line 2 of it
    std::string folded, openmetrics;
    std::string pprof;  // the profile file, in the test's directory
};

RubyProfiles profile_ruby_leak(const TemporaryDirectory& directory) {
    RubyProfiles profiles;
    profiles.script = (directory.path() / "<le\"ak\\>.rb").string();
    std::ofstream(profiles.script) << "kept = []\n"
                                   << kStrings << ".times { kept << (\"x\" * " << kStringBytes << ") }\n"
                                   << "STDOUT.puts \"READY\"\nSTDOUT.flush\nSTDIN.gets\n";
    e2e::Target target({LEAKWRAP_RUBY, profiles.script}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const e2e::Completed folded = e2e::run_report({pid, "--format", "folded"});
    const e2e::Completed openmetrics = e2e::run_report({pid, "--format", "openmetrics"});
    profiles.pprof = (directory.path() / "heap.pb.gz").string();
    const e2e::Completed pprof = e2e::run_report({pid, "--format", "pprof", "-o", profiles.pprof});
    EXPECT_EQ(target.release_and_wait(), 0);
    EXPECT_EQ(folded.exit_code, 0) << folded.err;
    EXPECT_EQ(openmetrics.exit_code, 0) << openmetrics.err;
    EXPECT_EQ(pprof.exit_code, 0) << pprof.err;
    profiles.folded = folded.out;
    profiles.openmetrics = openmetrics.out;
    return profiles;
}

class RubyLocation : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(LEAKWRAP_RUBY).empty()) GTEST_SKIP() << "no ruby (scripts/setup.sh installs it)";
    }
    TemporaryDirectory directory;
};

// The Ruby backtrace is the outer part of a folded stack (a flame graph roots at the app), the
// native frames below the VM the inner part: "ruby:…;ruby:leak.rb:2;…;native;native value".
TEST_F(RubyLocation, IsTheOuterPartOfTheFoldedStack) {
    const RubyProfiles profiles = profile_ruby_leak(directory);
    const std::string frame = "ruby:" + profiles.script + ":2;";
    unsigned long long bytes = 0;
    std::istringstream lines(profiles.folded);
    for (std::string line; std::getline(lines, line);) {
        const auto at = line.rfind(frame);
        if (at == std::string::npos) continue;
        EXPECT_EQ(line.find("ruby:", at + frame.size()), std::string::npos) << line;  // innermost Ruby frame
        EXPECT_EQ(line.compare(0, 5, "ruby:"), 0) << line;                            // rooted at Ruby
        EXPECT_LT(at + frame.size(), line.rfind(' ')) << line;                        // native frames inside
        bytes += std::stoull(line.substr(line.rfind(' ') + 1));
    }
    EXPECT_GE(bytes, static_cast<unsigned long long>(kStrings) * kStringBytes) << profiles.folded;
}

TEST_F(RubyLocation, LabelsItsOpenMetricsRow) {
    const RubyProfiles profiles = profile_ruby_leak(directory);
    const Exposition exposition = parse_openmetrics(profiles.openmetrics);
    double bytes = 0;
    for (const auto& sample : exposition.samples)
        if (sample.name == "leakwrap_site_live_bytes" && sample.labels.contains("ruby") &&
            sample.labels.at("ruby") == profiles.script + ":2")
            bytes += sample.value;
    EXPECT_GE(bytes, static_cast<double>(kStrings) * kStringBytes) << profiles.openmetrics;
}

TEST_F(RubyLocation, IsAFunctionHoldingTheLeakInGoToolPprof) {
    if (!have_go()) GTEST_SKIP() << "no go in PATH (scripts/setup.sh installs golang-go)";
    const RubyProfiles profiles = profile_ruby_leak(directory);
    const e2e::Completed pprof = go_pprof_top(profiles.pprof, directory.path());
    if (wants_network(pprof)) GTEST_SKIP() << "go tool pprof wants the network here: " << pprof.err;
    ASSERT_EQ(pprof.exit_code, 0) << pprof.err;
    const PprofTop top = parse_pprof_top(pprof.out);
    const auto line = std::find_if(top.rows.begin(), top.rows.end(), [&](const PprofTopRow& row) {
        return row.function == "ruby:" + profiles.script + ":2";
    });
    ASSERT_NE(line, top.rows.end()) << pprof.out;
    EXPECT_GE(line->cumulative_bytes, static_cast<unsigned long long>(kStrings) * kStringBytes) << pprof.out;

    // By source line, pprof names the function's file and line: the Ruby frame carries both.
    const e2e::Completed by_line = go_pprof_top(profiles.pprof, directory.path(), {"-lines"});
    ASSERT_EQ(by_line.exit_code, 0) << by_line.err;
    const PprofTop lines = parse_pprof_top(by_line.out);
    const std::string located = "ruby:" + profiles.script + ":2 " + profiles.script + ":2";
    EXPECT_TRUE(std::any_of(lines.rows.begin(), lines.rows.end(),
                            [&](const PprofTopRow& row) { return row.function == located; }))
        << "no row " << located << " in\n"
        << by_line.out;
}

}  // namespace
}  // namespace leakwrap::ecosystem
