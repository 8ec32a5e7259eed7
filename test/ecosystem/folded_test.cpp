// --format folded on a real program: lines parse back into stacks (outermost first) whose values
// add up to the process's totals, and the leaking function carries its known bytes.
#include <gtest/gtest.h>

#include <sstream>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

struct FoldedLine {
    std::vector<std::string> frames;  // outermost first
    unsigned long long value = 0;
};

std::vector<FoldedLine> parse_folded(const std::string& text) {
    std::vector<FoldedLine> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const auto space = line.rfind(' ');
        EXPECT_NE(space, std::string::npos) << line;
        if (space == std::string::npos) continue;
        FoldedLine folded;
        folded.value = std::stoull(line.substr(space + 1));
        std::istringstream stack(line.substr(0, space));
        for (std::string frame; std::getline(stack, frame, ';');) {
            EXPECT_FALSE(frame.empty()) << line;
            folded.frames.push_back(frame);
        }
        lines.push_back(std::move(folded));
    }
    return lines;
}

unsigned long long sum_of(const std::vector<FoldedLine>& lines) {
    unsigned long long sum = 0;
    for (const auto& line : lines) sum += line.value;
    return sum;
}

// The lines whose innermost frame is `function`.
std::vector<FoldedLine> lines_allocating_in(const std::vector<FoldedLine>& lines, const std::string& function) {
    std::vector<FoldedLine> matching;
    for (const auto& line : lines)
        if (!line.frames.empty() && line.frames.back() == function) matching.push_back(line);
    return matching;
}

struct FoldedProfiles {
    nlohmann::json totals;
    std::vector<FoldedLine> live, alloc;
};

FoldedProfiles profile_alloc_kinds() {
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    FoldedProfiles profiles;
    profiles.totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed live = e2e::run_report({pid, "--format", "folded"});
    const e2e::Completed alloc = e2e::run_report({pid, "--format", "folded", "--value", "alloc"});
    EXPECT_EQ(target.release_and_wait(), 0);
    EXPECT_EQ(live.exit_code, 0) << live.err;
    EXPECT_EQ(alloc.exit_code, 0) << alloc.err;
    profiles.live = parse_folded(live.out);
    profiles.alloc = parse_folded(alloc.out);
    return profiles;
}

TEST(Folded, LiveValuesAddUpToTheLiveTotalAndTheLeakHasItsBytes) {
    const FoldedProfiles profiles = profile_alloc_kinds();
    EXPECT_EQ(sum_of(profiles.live), profiles.totals.at("live_bytes").get<unsigned long long>());
    for (const auto& line : profiles.live) EXPECT_GT(line.value, 0u) << line.frames.back();

    const auto leak = lines_allocating_in(profiles.live, "leak_malloc");
    ASSERT_EQ(leak.size(), 1u);
    EXPECT_EQ(leak[0].value, (kMallocCount - kMallocFreed) * kMallocSize);
    // Outermost first: main called leak_malloc.
    ASSERT_GE(leak[0].frames.size(), 2u);
    EXPECT_EQ(leak[0].frames[leak[0].frames.size() - 2], "main");
    EXPECT_TRUE(lines_allocating_in(profiles.live, "churn").empty()) << "churn frees everything";
}

TEST(Folded, AllocValuesAddUpToTheBytesEverAllocated) {
    const FoldedProfiles profiles = profile_alloc_kinds();
    EXPECT_EQ(sum_of(profiles.alloc), profiles.totals.at("alloc_bytes").get<unsigned long long>());
    const auto leak = lines_allocating_in(profiles.alloc, "leak_malloc");
    ASSERT_EQ(leak.size(), 1u);
    EXPECT_EQ(leak[0].value, kMallocCount * kMallocSize);
    EXPECT_FALSE(lines_allocating_in(profiles.alloc, "churn").empty());
}

}  // namespace
}  // namespace leakwrap::ecosystem
