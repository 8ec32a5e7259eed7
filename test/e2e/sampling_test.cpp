// Sampling mode (LEAKWRAP_SAMPLE): totals stay exact, and the scaled per-site estimates land
// within the stated tolerance of the truth the program knows.
#include <gtest/gtest.h>

#include <cmath>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::sampling;

nlohmann::json profile_sampled() {
    Target target({paths::program("sampling_workload")},
                  Environment::profiled().set("LEAKWRAP_SAMPLE", std::to_string(kSampleInterval)));
    target.wait_ready();
    nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(target.release_and_wait(), 0);
    return report;
}

void expect_within_tolerance(double estimate, double truth, const char* what) {
    EXPECT_LE(std::fabs(estimate - truth), kTolerance * truth)
        << what << ": estimate " << estimate << ", truth " << truth;
}

TEST(Sampling, EstimatesLandWithinToleranceOfTheTruth) {
    const nlohmann::json report = profile_sampled();
    EXPECT_EQ(report.at("mode"), "sampled");
    EXPECT_EQ(report.at("sample_interval").get<std::size_t>(), kSampleInterval);

    const SiteMatch site = sites_calling(report, "allocate_sampled_block", 1);
    ASSERT_GE(site.sites, 1u);
    expect_within_tolerance(site.counters.allocs, kBlocks, "allocs");
    expect_within_tolerance(site.counters.live_blocks, kBlocks - kFreed, "live blocks");
    expect_within_tolerance(site.counters.live_bytes, (kBlocks - kFreed) * kBlockSize, "live bytes");
}

TEST(Sampling, TotalsAndBinsStayExact) {
    const nlohmann::json report = profile_sampled();
    const nlohmann::json& totals = report.at("totals");
    // The workload's blocks are a lower bound; the runtime's own few allocations come on top.
    EXPECT_GE(totals.at("allocs").get<long long>(), static_cast<long long>(kBlocks));
    EXPECT_LT(totals.at("allocs").get<long long>(), static_cast<long long>(kBlocks) + 200);
    EXPECT_GE(totals.at("frees").get<long long>(), static_cast<long long>(kFreed));
    long long bin_allocs = 0;
    for (const auto& bin : report.at("bins")) {
        bin_allocs += bin.at("allocs").get<long long>();
        if (bin.at("limit") == 1024) {
            EXPECT_GE(bin.at("live_blocks").get<long long>(), static_cast<long long>(kBlocks - kFreed));
            EXPECT_LT(bin.at("live_blocks").get<long long>(), static_cast<long long>(kBlocks - kFreed) + 20);
        }
    }
    EXPECT_EQ(bin_allocs, totals.at("allocs").get<long long>());
}

}  // namespace
}  // namespace leakwrap::e2e
