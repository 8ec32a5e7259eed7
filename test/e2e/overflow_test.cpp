// With room, every distinct stack gets its own site; once the table is nearly full, new stacks
// are recorded by their innermost frames (reduced stacks, shared by every stack that has them);
// once even those find no room, new stacks fold into the overflow sites (one per size class,
// reported as one merged row). The totals stay exactly what they would have been with room.
#include <gtest/gtest.h>

#include <algorithm>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::many_sites;

// Template instances print as e.g. "void many_sites_leak<17ul>()" or "many_sites_leak<17>".
constexpr std::string_view kLeakerName = "many_sites_leak<";
// Above the minimum capacity (the 88 overflow sites plus one), far below the program's stacks.
constexpr std::size_t kSmallTable = 120;

nlohmann::json profile(const std::string& program, std::size_t max_sites) {
    Target target({paths::program(program)},
                  Environment::profiled().set("LEAKWRAP_MAX_SITES", std::to_string(max_sites)));
    target.wait_ready();
    nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(target.release_and_wait(), 0);
    return report;
}

// Site records outside the overflow row: lost_sites counts records (a stack of several size
// classes has one per class), so compare records, not rows.
std::size_t ordinary_sites(const nlohmann::json& report) {
    std::size_t count = 0;
    for (const auto& site : report.at("sites"))
        count += site.at("overflow").get<bool>() ? 0 : site.at("records").size();
    return count;
}

TEST(ManySites, EachDistinctStackGetsItsOwnSiteWhenThereIsRoom) {
    const nlohmann::json report = profile("many_sites", 65536);
    const SiteMatch leakers = sites_calling_function_containing(report, kLeakerName, 1);
    EXPECT_EQ(leakers.sites, kSites);
    EXPECT_EQ(leakers.counters, (Counters{static_cast<long long>(kSites), static_cast<long long>(kSites * kBlockSize),
                                          static_cast<long long>(kSites), 0}));
    EXPECT_EQ(report.at("totals").at("lost_sites").get<long long>(), 0);
    const nlohmann::json* overflow = overflow_site(report);
    if (overflow != nullptr) {
        EXPECT_EQ(overflow->at("allocs").get<long long>(), 0);
    }
    expect_consistent_totals(report);
}

TEST(ManySites, FullTableFoldsNewStacksIntoTheOverflowSiteWithExactTotals) {
    const nlohmann::json roomy = profile("many_sites", 65536);
    const nlohmann::json full = profile("many_sites", kSmallTable);

    // The program does the same allocations in both runs, so only their attribution may differ.
    for (const char* field : {"live_bytes", "live_blocks", "allocs", "frees", "alloc_bytes", "free_bytes"})
        EXPECT_EQ(full.at("totals").at(field), roomy.at("totals").at(field)) << "totals." << field;
    expect_consistent_totals(full);

    EXPECT_LE(ordinary_sites(full), kSmallTable - 88) << "slots 0..87 are the overflow sites";
    const SiteMatch placed = sites_calling_function_containing(full, kLeakerName, 1);
    EXPECT_EQ(placed.counters,
              (Counters{static_cast<long long>(placed.sites), static_cast<long long>(placed.sites * kBlockSize),
                        static_cast<long long>(placed.sites), 0}));
    // Every distinct stack that had a site of its own in the roomy run but not here was folded.
    EXPECT_EQ(full.at("totals").at("lost_sites").get<std::size_t>(), ordinary_sites(roomy) - ordinary_sites(full));
    const auto folded = static_cast<long long>(kSites - placed.sites);
    EXPECT_GE(full.at("totals").at("lost_sites").get<long long>(), folded);
    const nlohmann::json* overflow = overflow_site(full);
    ASSERT_NE(overflow, nullptr);
    EXPECT_GE(overflow->at("live_blocks").get<long long>(), folded);
    EXPECT_GE(overflow->at("live_bytes").get<long long>(), folded * static_cast<long long>(kBlockSize));
}

// A leak that starts once the table is nearly full is still found by its innermost frames: the
// late chains share one reduced stack, ending in leak_leaf <- handle <- route, which holds their
// blocks; no block of the leak is anonymous.
TEST(ManySites, ALateLeakIsFoundByItsInnermostFramesInANearlyFullTable) {
    namespace truth = ground_truth::late_leak;
    const nlohmann::json report = profile("late_leak", kSmallTable);
    EXPECT_EQ(report.at("totals").at("lost_sites").get<long long>(), 0);
    const SiteMatch leaf = sites_calling(report, "leak_leaf()", 1);
    EXPECT_EQ(leaf.counters, (Counters{static_cast<long long>(truth::kRoutes),
                                       static_cast<long long>(truth::kRoutes * truth::kBlockSize),
                                       static_cast<long long>(truth::kRoutes), 0}));
    long long reduced_blocks = 0;
    for (const auto& site : report.at("sites")) {
        if (!site.at("reduced").get<bool>()) continue;
        const auto& frames = site.at("frames");
        // Three recorded addresses; a libc one may stand for more frames, its inlined functions.
        const auto addresses = std::count_if(frames.begin(), frames.end(),
                                             [](const auto& frame) { return !frame.value("inlined", false); });
        ASSERT_EQ(addresses, 3) << site.dump();
        if (frames[0].at("function") != "leak_leaf()") continue;
        EXPECT_EQ(frames[1].at("function"), "handle()");
        EXPECT_EQ(frames[2].at("function"), "route()");
        reduced_blocks += site.at("live_blocks").get<long long>();
    }
    // Most chains come after the table filled (it has room for a few dozen sites).
    EXPECT_GE(reduced_blocks, static_cast<long long>(truth::kRoutes) - 32);
    expect_consistent_totals(report);
}

}  // namespace
}  // namespace leakwrap::e2e
