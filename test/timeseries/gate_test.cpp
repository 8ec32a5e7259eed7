// suspects --fail-on, the gate for CI: on recorded series whose truth is known, and through
// examples/ci/soak_gate.sh on real programs under the preload, run as CI would run it.
#include <gtest/gtest.h>

#include <sstream>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

constexpr int kGateFailed = 3;

std::string recorded(const std::string& name) {
    return std::string(LEAKWRAP_SOURCE_DIR) + "/test/timeseries/series/" + name;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(Gate, FailsOnTheOneLeakAndPrintsItsRow) {
    const Completed gated = run_report({"suspects", recorded("steady-leak.jsonl"), "--fail-on", "leak"});
    EXPECT_EQ(gated.exit_code, kGateFailed) << gated.err;
    const std::vector<std::string> findings = lines_of(gated.err);
    ASSERT_EQ(findings.size(), 1u) << gated.err;
    EXPECT_TRUE(
        findings.front().starts_with("leakwrap-report: gate: leak: leak_steadily() (steady_leak.cpp:29)  [id 89]: "))
        << findings.front();
    EXPECT_TRUE(contains(findings.front(), "retained 100%")) << findings.front();
    EXPECT_TRUE(contains(gated.out, "CLASS")) << "the table is printed as without the gate";

    const Completed puma =
        run_report({"suspects", recorded("puma-bursts-then-idle.jsonl"), "--fail-on", "leak", "--format", "json"});
    EXPECT_EQ(puma.exit_code, kGateFailed);
    ASSERT_EQ(lines_of(puma.err).size(), 1u) << puma.err;
    EXPECT_TRUE(contains(puma.err, "examples/puma/config.ru:12")) << puma.err;
    EXPECT_TRUE(nlohmann::json::accept(puma.out)) << "stdout stays the JSON";
}

TEST(Gate, GrowthIsJudgedOnTheTotalLiveBytesAgainstMaxGrowth) {
    // steady-leak.jsonl's live bytes grow by 221 KiB.
    const std::string series = recorded("steady-leak.jsonl");
    EXPECT_EQ(run_report({"suspects", series, "--fail-on", "growth"}).exit_code, 0) << "default 1MiB";
    const Completed over = run_report({"suspects", series, "--fail-on", "growth", "--max-growth", "100KiB"});
    EXPECT_EQ(over.exit_code, kGateFailed);
    EXPECT_TRUE(contains(over.err, "gate: growth: the tracked live bytes grew by +")) << over.err;
    EXPECT_TRUE(contains(over.err, "more than --max-growth 100.0 KiB")) << over.err;
    const Completed both = run_report({"suspects", series, "--fail-on", "leak,growth", "--max-growth", "0B"});
    EXPECT_EQ(lines_of(both.err).size(), 2u) << both.err;
}

TEST(Gate, RefusesWhatItCannotJudgeInOneLine) {
    const Completed no_rss = run_report({"suspects", recorded("steady-leak.jsonl"), "--fail-on", "rss"});
    EXPECT_EQ(no_rss.exit_code, 1);
    EXPECT_EQ(lines_of(no_rss.err).size(), 1u) << no_rss.err;
    EXPECT_TRUE(contains(no_rss.err, "no RSS")) << no_rss.err;
    for (const std::vector<std::string>& wrong : {std::vector<std::string>{"--fail-on", "leaks"},
                                                  {"--fail-on", "growth", "--max-growth", "1MB"},
                                                  {"--max-growth", "-1KiB"}}) {
        std::vector<std::string> arguments{"suspects", recorded("steady-leak.jsonl")};
        arguments.insert(arguments.end(), wrong.begin(), wrong.end());
        const Completed refused = run_report(arguments);
        EXPECT_EQ(refused.exit_code, 2) << wrong.back();
        EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
    }
}

// The CI recipe itself, on Python programs that allocate a 4 KiB buffer every 10 ms and either
// keep every one or drop it again. Their first samples come after a second's warm-up: the tail
// of Python's start (modules and types it keeps) is most of what a loaded machine's first
// samples see, and the gate then rightly finds the program that drops its buffers growing.
Completed soak(const std::string& program, const std::vector<std::string>& gate) {
    std::vector<std::string> argv{
        "bash", std::string(LEAKWRAP_SOURCE_DIR) + "/examples/ci/soak_gate.sh", "-d", "3s", "-i", "250ms", "-w", "1"};
    argv.insert(argv.end(), gate.begin(), gate.end());
    argv.insert(argv.end(), {"--", paths::python3, "-c", program});
    return run(argv, Environment::bare().set("LEAKWRAP_BUILD_DIR", LEAKWRAP_BUILD_DIR), {}, 120s);
}

constexpr const char* kKeepsEveryBuffer =
    "import time\nkept = []\nwhile True:\n    kept.append(bytearray(4096))\n    time.sleep(0.01)\n";
constexpr const char* kDropsEveryBuffer =
    "import time\nwhile True:\n    buffer = bytearray(4096)\n    time.sleep(0.01)\n";

TEST(Gate, SoakScriptFailsAProgramThatLeaksAndPassesOneThatDoesNot) {
    const Completed leaking = soak(kKeepsEveryBuffer, {});
    EXPECT_EQ(leaking.exit_code, kGateFailed) << leaking.out << leaking.err;
    EXPECT_TRUE(contains(leaking.err, "leakwrap-report: gate: leak: ")) << leaking.err;
    EXPECT_TRUE(contains(leaking.out, "watch: stopped, --duration reached")) << leaking.out;

    const Completed clean = soak(kDropsEveryBuffer, {"-f", "leak,growth"});
    EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
    EXPECT_FALSE(contains(clean.err, "gate:")) << clean.err;
}

}  // namespace
}  // namespace leakwrap::e2e
