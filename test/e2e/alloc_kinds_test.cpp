// Every allocation entry point is counted at the function that called it, with exact live blocks
// and bytes, and blocks that were freed again leave nothing live.
#include <unistd.h>

#include <gtest/gtest.h>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::alloc_kinds;

// C++ new reaches malloc through operator new (and maybe operator new[]), so the function that
// said `new` sits a few frames in.
constexpr std::size_t kFramesToSearch = 4;

struct Expected {
    const char* function;
    Counters counters;
};

void PrintTo(const Expected& expected, std::ostream* out) { *out << expected.function; }

Counters counted(std::size_t live_blocks, std::size_t live_bytes, std::size_t allocs, std::size_t frees) {
    return {static_cast<long long>(live_blocks), static_cast<long long>(live_bytes), static_cast<long long>(allocs),
            static_cast<long long>(frees)};
}

// For functions that free nothing.
Counters all_live(std::size_t blocks, std::size_t bytes) { return counted(blocks, bytes, blocks, 0); }

template <std::size_t N>
Counters all_live(const AlignedRequest (&requests)[N]) {
    std::size_t blocks = 0, bytes = 0;
    for (const auto& request : requests) {
        blocks += request.count;
        bytes += request.count * request.size;
    }
    return all_live(blocks, bytes);
}

std::vector<Expected> expectations() {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pvalloc_size = (kPvallocSize + page - 1) / page * page;
    const std::size_t last_chain_size = kReallocChainSizes[kReallocChainLength - 1];
    const std::size_t churn_allocs = kChurnRounds * kChurnAllocsPerRound;
    return {
        {"leak_malloc",
         counted(kMallocCount - kMallocFreed, (kMallocCount - kMallocFreed) * kMallocSize, kMallocCount, kMallocFreed)},
        {"leak_calloc", all_live(kCallocCount, kCallocCount * kCallocElements * kCallocElementSize)},
        // A realloc frees the old block where it was allocated and allocates anew at its caller.
        {"leak_realloc_chain",
         counted(kReallocChains, kReallocChains * last_chain_size, kReallocChains * kReallocChainLength,
                 kReallocChains * (kReallocChainLength - 1))},
        {"leak_posix_memalign", all_live(kPosixMemalign)},
        {"leak_aligned_alloc", all_live(kAlignedAlloc)},
        {"leak_memalign", all_live(kMemalign)},
        {"leak_valloc", all_live(kVallocCount, kVallocCount * kVallocSize)},
        {"leak_pvalloc", all_live(kPvallocCount, kPvallocCount * pvalloc_size)},
        {"leak_page_aligned", counted(kPageAlignedKept, kPageAlignedKept * kPageAlignedSize, kPageAlignedCount,
                                      kPageAlignedCount - kPageAlignedKept)},
        {"leak_cxx_new_array",
         all_live(kNewCharArrayCount + kNewIntArrayCount,
                  kNewCharArrayCount * kNewCharArrayLength + kNewIntArrayCount * kNewIntArrayLength * sizeof(int))},
        {"churn", counted(0, 0, churn_allocs, churn_allocs)},
    };
}

// Runs alloc_kinds under the preload, reads its report while it waits, and checks it exits 0
// (it exits 1 if any block it got broke alignment or size).
nlohmann::json profile_alloc_kinds() {
    Target target({paths::program("alloc_kinds")}, Environment::profiled());
    target.wait_ready();
    nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(report.at("pid").get<pid_t>(), target.pid());
    EXPECT_EQ(target.release_and_wait(), 0);
    return report;
}

class AllocKinds : public ::testing::TestWithParam<Expected> {};

TEST_P(AllocKinds, FunctionHasExactlyItsLiveBlocksAndBytes) {
    const nlohmann::json report = profile_alloc_kinds();
    EXPECT_EQ(sites_calling(report, GetParam().function, kFramesToSearch).counters, GetParam().counters);
}

INSTANTIATE_TEST_SUITE_P(EveryEntryPoint, AllocKinds, ::testing::ValuesIn(expectations()),
                         [](const auto& test) { return std::string(test.param.function); });

TEST(AllocKindsReport, TotalsAreTheSumOfTheSites) { expect_consistent_totals(profile_alloc_kinds()); }

TEST(AllocKindsReport, InnermostFrameIsTheCallerOfMallocAndResolvesToItsSource) {
    const nlohmann::json report = profile_alloc_kinds();
    const SiteMatch innermost = sites_calling(report, "leak_malloc", 1);
    ASSERT_EQ(innermost.sites, 1u) << "leak_malloc calls malloc from one place";
    EXPECT_EQ(innermost.counters.live_blocks, static_cast<long long>(kMallocCount - kMallocFreed));

    for (const auto& site : report.at("sites")) {
        const auto& frames = site.at("frames");
        if (frames.empty() || frames[0].at("function") != "leak_malloc") continue;
        ASSERT_GE(frames.size(), 2u);
        EXPECT_EQ(frames[1].at("function"), "main");
        EXPECT_TRUE(frames[0].at("file").get<std::string>().ends_with("alloc_kinds.cpp")) << frames[0];
        EXPECT_GT(frames[0].at("line").get<int>(), 0) << frames[0];
        EXPECT_TRUE(frames[0].at("module").get<std::string>().ends_with("/alloc_kinds")) << frames[0];
        EXPECT_TRUE(frames[0].at("addr").get<std::string>().starts_with("0x")) << frames[0];
    }
}

TEST(AllocKindsReport, NamesTheLiveExecutable) {
    const nlohmann::json report = profile_alloc_kinds();
    EXPECT_EQ(report.at("state"), "alive");
    EXPECT_EQ(report.at("exe").get<std::string>(), paths::program("alloc_kinds"));
}

TEST(AllocKindsBare, ProgramGetsWellFormedBlocksWithoutThePreload) {
    Target target({paths::program("alloc_kinds")}, Environment::bare());
    target.wait_ready();
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
