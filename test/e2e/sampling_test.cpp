// Sampling mode (LEAKWRAP_SAMPLE) under glibc: a block that is not sampled is glibc's own, with
// nothing of leakwrap's around it, and the scaled estimates, per site and of the totals and bins
// alike, land within the stated tolerance of the truth the program knows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

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

TEST(Sampling, TotalsAndBinsAreEstimatedFromTheSampledBlocksAsTheSitesAre) {
    const nlohmann::json report = profile_sampled();
    EXPECT_EQ(report.at("totals_estimated"), true);
    const nlohmann::json& totals = report.at("totals");
    // The workload's blocks, and the runtime's own few allocations beside them.
    expect_within_tolerance(totals.at("allocs").get<double>(), kBlocks, "total allocs");
    expect_within_tolerance(totals.at("live_bytes").get<double>(), (kBlocks - kFreed) * kBlockSize, "total live bytes");
    long long bin_allocs = 0;
    for (const auto& bin : report.at("bins")) {
        bin_allocs += bin.at("allocs").get<long long>();
        if (bin.at("limit") == 1024)
            expect_within_tolerance(bin.at("live_blocks").get<double>(), kBlocks - kFreed, "live blocks of 1 KiB");
    }
    EXPECT_EQ(bin_allocs, totals.at("allocs").get<long long>());
}

// Each block of 1 to 1000 bytes, as glibc's chunk-size word before it and its usable size show
// it: identical to a bare run when nothing is sampled, so no unsampled block carries a header;
// and not so in exact mode, where every block does (the check can tell).
TEST(Sampling, AnUnsampledBlockIsGlibcsOwnWithNothingOfLeakwrapsAroundIt) {
    const Completed bare = run({paths::program("sampling_workload"), "chunks"}, Environment::bare());
    ASSERT_EQ(bare.exit_code, 0) << bare.err;
    ASSERT_EQ(std::count(bare.out.begin(), bare.out.end(), '\n'), 1000) << bare.out;
    const Completed unsampled =
        run({paths::program("sampling_workload"), "chunks"},
            Environment::profiled().set("LEAKWRAP_SAMPLE", std::to_string(std::uint64_t{1} << 40)));
    EXPECT_EQ(unsampled.exit_code, 0) << unsampled.err;
    EXPECT_EQ(unsampled.out, bare.out);
    const Completed exact = run({paths::program("sampling_workload"), "chunks"}, Environment::profiled());
    EXPECT_EQ(exact.exit_code, 0) << exact.err;
    EXPECT_NE(exact.out, bare.out);
}

}  // namespace
}  // namespace leakwrap::e2e
