// Inlined functions are frames of their own. inline_leak, built at -O2, allocates in make_buffer,
// which the compiler inlined into handle, once directly and once through requests::prepare,
// inlined too. Every format must name make_buffer at its malloc line, each function it was
// inlined into at the line of the call, and keep each frame's address, module and offset those
// of the code.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "ground_truth.h"
#include "harness.h"
#include "inline_leak_source.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::inline_leak;
using inline_leak::ExpectedSite;

bool in_program(const nlohmann::json& frame) {
    return frame.at("module").is_string() &&
           std::filesystem::path(frame.at("module").get<std::string>()).filename() == "inline_leak";
}

// The row of the site whose blocks are `block_size` bytes, allocated in inline_leak's code.
const nlohmann::json& site_of(const nlohmann::json& report, std::size_t block_size) {
    for (const auto& site : report.at("sites")) {
        const auto& frames = site.at("frames");
        if (!frames.empty() && in_program(frames[0]) && site.at("live_bytes") == kRequests * block_size) return site;
    }
    throw std::runtime_error("no site of " + std::to_string(block_size) + "-byte blocks: " + report.dump(1));
}

void expect_frames(const nlohmann::json& site, const ExpectedSite& expected) {
    EXPECT_EQ(site.at("live_blocks"), kRequests);
    const auto& frames = site.at("frames");
    ASSERT_GE(frames.size(), expected.frames.size()) << site.dump(1);
    for (std::size_t i = 0; i < expected.frames.size(); ++i) {
        SCOPED_TRACE("frame #" + std::to_string(i));
        const auto& frame = frames[i];
        EXPECT_EQ(frame.at("function"), expected.frames[i].function) << frame;
        EXPECT_EQ(frame.at("line"), expected.frames[i].line) << frame;
        EXPECT_TRUE(frame.at("file").get<std::string>().ends_with("inline_leak.cpp")) << frame;
        // Present only when true.
        EXPECT_EQ(frame.value("inlined", false), expected.frames[i].inlined) << frame;
        EXPECT_EQ(frame.contains("inlined"), expected.frames[i].inlined) << frame;
        EXPECT_TRUE(in_program(frame)) << frame;
    }
    // An inlined frame is at the address of the frame it was inlined into: the code's address.
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
        if (!frames[i].value("inlined", false)) continue;
        for (const char* key : {"addr", "module", "module_offset"})
            EXPECT_EQ(frames[i].at(key), frames[i + 1].at(key)) << key << " of frame #" << i;
    }
}

class InlineFrames : public ::testing::Test {
protected:
    void SetUp() override {
        target_ =
            std::make_unique<Target>(std::vector<std::string>{paths::program("inline_leak")}, Environment::profiled());
        target_->wait_ready();
    }
    void TearDown() override { EXPECT_EQ(target_->release_and_wait(), 0); }

    // `leakwrap-report PID arguments...`, which must succeed.
    std::string report(std::vector<std::string> arguments) {
        arguments.insert(arguments.begin(), std::to_string(target_->pid()));
        const Completed completed = run_report(arguments);
        EXPECT_EQ(completed.exit_code, 0) << completed.err;
        return completed.out;
    }

    std::unique_ptr<Target> target_;
};

TEST_F(InlineFrames, JsonNamesEachInlinedFunctionAtItsLineAndEachCallerAtItsCall) {
    const nlohmann::json json = report_json(target_->pid());
    {
        SCOPED_TRACE("make_buffer inlined into handle");
        expect_frames(site_of(json, kDirectSize), inline_leak::direct_site());
    }
    {
        SCOPED_TRACE("make_buffer inlined into requests::prepare inlined into handle");
        expect_frames(site_of(json, kNestedSize), inline_leak::nested_site());
    }
    expect_consistent_totals(json);
}

TEST_F(InlineFrames, TextNumbersInlinedFunctionsAsFramesAndMarksThem) {
    const std::string text = report({"--top", "0"});
    for (const ExpectedSite& site : {inline_leak::direct_site(), inline_leak::nested_site()}) {
        // "    #1 0x55d0c1a2b262 requests::prepare(unsigned int) at /…/inline_leak.cpp:34
        // (inline_leak) [inlined]", the frames one line after the other.
        std::string lines;
        for (std::size_t i = 0; i < site.frames.size(); ++i) {
            const auto& frame = site.frames[i];
            lines += "    #" + std::to_string(i) + " 0x[0-9a-f]+ " +
                     std::regex_replace(frame.function, std::regex(R"([()])"), R"(\$&)") +
                     " at \\S*/inline_leak\\.cpp:" + std::to_string(frame.line) + " \\(inline_leak\\)" +
                     (frame.inlined ? " \\[inlined\\]" : "") + "\n";
        }
        EXPECT_TRUE(std::regex_search(text, std::regex(lines))) << lines << "\nnot in\n" << text;
    }
}

TEST_F(InlineFrames, FoldedStacksAndMetricsNameTheInlinedFunction) {
    const std::string folded = report({"--format", "folded"});
    EXPECT_NE(folded.find(";main;handle;make_buffer " + std::to_string(kRequests * kDirectSize) + "\n"),
              std::string::npos)
        << folded;
    EXPECT_NE(folded.find(";main;handle;requests::prepare(unsigned int);make_buffer " +
                          std::to_string(kRequests * kNestedSize) + "\n"),
              std::string::npos)
        << folded;

    // The innermost frame outside the runtimes names the site: the inlined function.
    const nlohmann::json json = report_json(target_->pid());
    const std::string metrics = report({"--format", "prometheus", "--top", "0"});
    for (const std::size_t size : {kDirectSize, kNestedSize}) {
        const std::string sample = "site=\"" + std::to_string(site_of(json, size).at("id").get<uint64_t>()) +
                                   "\",function=\"make_buffer\"} " + std::to_string(kRequests * size);
        EXPECT_NE(metrics.find(sample), std::string::npos) << sample << " not in\n" << metrics;
    }
}

TEST_F(InlineFrames, FocusMatchesInlinedFunctionsAndHideRuntimeCountsThem) {
    const nlohmann::json focused = report_json(target_->pid(), {"--focus", "^requests::prepare"});
    ASSERT_EQ(focused.at("sites").size(), 1u) << focused.dump(1);
    EXPECT_EQ(focused.at("sites")[0].at("live_bytes"), kRequests * kNestedSize);

    // An address's inlined functions are hidden or shown with it, and counted as frames.
    const nlohmann::json all = report_json(target_->pid());
    const nlohmann::json hidden = report_json(target_->pid(), {"--hide-runtime"});
    const auto& shown = site_of(hidden, kNestedSize);
    expect_frames(shown, inline_leak::nested_site());
    EXPECT_EQ(shown.at("frames").size(), inline_leak::nested_site().frames.size()) << shown.dump(1);
    EXPECT_EQ(shown.at("frames").size() + shown.at("hidden_frames").get<std::size_t>(),
              site_of(all, kNestedSize).at("frames").size());
}

}  // namespace
}  // namespace leakwrap::e2e
