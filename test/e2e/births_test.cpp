// Live memory by age on a real program (test/programs/startup_then_leak.cpp): 20 MB allocated at
// start-up in 2,000 blocks, then a leak of 300 blocks of 100 bytes from one function from 2.6 s
// on. With --born-after set between the two phases, the leak is the first row with exactly its
// blocks and the start-up rows are gone; --born-before keeps the start-up alone; the same from a
// segment left by kill -9. Each row says when its live blocks were born.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::startup_then_leak;

const nlohmann::json& first_row(const nlohmann::json& report) {
    static const nlohmann::json none = nlohmann::json::object();
    return report.at("sites").empty() ? none : report.at("sites").front();
}

bool row_calls(const nlohmann::json& row, std::string_view function) {
    for (const auto& frame : row.value("frames", nlohmann::json::array()))
        if (frame.at("function").is_string() && frame.at("function").get<std::string>() == function) return true;
    return false;
}

void expect_the_leak_alone_born_after(const nlohmann::json& report) {
    const nlohmann::json& leak = first_row(report);
    EXPECT_TRUE(row_calls(leak, "leak_request_buffer")) << leak.dump(1);
    EXPECT_EQ(leak.value("live_blocks", 0u), kLeaks);
    EXPECT_EQ(leak.value("live_bytes", 0u), kLeaks * kLeakSize);
    EXPECT_EQ(sites_calling(report, "load_configuration", 1).sites, 0u) << "start-up rows are left out";
    // Born after 2.0 s, the cell of --born-after 2s, and within the second the leak took.
    for (const auto& cell : leak.at("live_by_birth")) {
        EXPECT_GE(cell.at("from_s").get<double>(), 2.0) << cell.dump();
        EXPECT_LE(cell.at("from_s").get<double>(), 4.0) << cell.dump();
    }
    const auto& selection = report.at("births").at("selection");
    EXPECT_EQ(selection.at("from_s").get<double>(), 2.0);
    EXPECT_EQ(selection.at("left_out_live_blocks").get<uint64_t>(), kStartupBlocks);
}

void expect_the_start_up_alone_born_before(const nlohmann::json& report) {
    const nlohmann::json& start_up = first_row(report);
    EXPECT_TRUE(row_calls(start_up, "load_configuration")) << start_up.dump(1);
    EXPECT_EQ(start_up.value("live_blocks", 0u), kStartupBlocks);
    EXPECT_EQ(start_up.value("live_bytes", 0u), kStartupBlocks * kStartupBlockSize);
    EXPECT_EQ(sites_calling(report, "leak_request_buffer", 1).sites, 0u);
    ASSERT_EQ(start_up.at("live_by_birth").size(), 1u) << start_up.dump(1);
    EXPECT_EQ(start_up.at("live_by_birth")[0].at("from_s").get<double>(), 0.0);
}

TEST(Births, BornAfterTheStartUpRanksTheLeakFirstAndBornBeforeTheStartUpAlone) {
    Target target({paths::program("startup_then_leak")}, Environment::profiled());
    target.wait_ready("READY", 30s);
    const std::string pid = std::to_string(target.pid());

    // Without a window the start-up memory ranks first, as it does in a one-shot report.
    EXPECT_TRUE(row_calls(first_row(report_json(target.pid())), "load_configuration"));
    expect_the_leak_alone_born_after(report_json(target.pid(), {"--born-after", kBornAfter}));
    expect_the_start_up_alone_born_before(report_json(target.pid(), {"--born-before", kBornAfter}));

    const Completed text = run_report({pid, "--born-after", kBornAfter, "--top", "1"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("births: known to 0.5 s for the first 4.0 s, then to 1/8 of the time since the start\n"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("born from 2.0 s"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("#1 site"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("    live born 2."), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("leak_request_buffer"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("load_configuration"), std::string::npos) << text.out;
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Births, ASegmentLeftByKillNineAnswersTheSame) {
    Target target({paths::program("startup_then_leak")}, Environment::profiled());
    target.wait_ready("READY", 30s);
    const pid_t gone = target.pid();
    EXPECT_EQ(target.kill_and_reap(), 128 + SIGKILL);
    ASSERT_TRUE(segment_exists(gone));
    const auto after = report_json(gone, {"--born-after", kBornAfter});
    EXPECT_EQ(after.at("state"), "dead");
    expect_the_leak_alone_born_after(after);
    expect_the_start_up_alone_born_before(report_json(gone, {"--born-before", kBornAfter}));
    // The allocator's last reading outlives the process too: its leak ran past one.
    const auto& allocator = after.at("totals").at("allocator");
    EXPECT_EQ(allocator.at("allocator"), "glibc") << allocator.dump(2);
    EXPECT_TRUE(allocator.at("age_seconds").is_null()) << "a dead process's reading has no age now";
    EXPECT_GE(allocator.at("in_use_bytes").get<unsigned long long>(), kStartupBlocks * kStartupBlockSize);
    std::filesystem::remove(segment_path(gone));
}

TEST(Births, AWindowOnASegmentWithoutBirthsOrAnUnparsableDurationIsRefused) {
    const Completed typo = run_report({"1", "--born-after", "30 seconds"});
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_NE(typo.err.find("not a duration like 500ms, 5s, 2m or 1h: 30 seconds"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace leakwrap::e2e
