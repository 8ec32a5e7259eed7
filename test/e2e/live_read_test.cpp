// A segment read while its writer keeps adding sites: every read must be a snapshot the writer
// could have been in. The reader reads the site records where the writer writes them, and the
// rest after them in the order the writer publishes (stacks after the sites that name them,
// delta entries and bins after the counters): a stack read before the site naming it was ready
// would be cut short or another's, a delta entry read before the record its counts then move
// into would count them twice.
#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::many_stacks;

// many_stacks' leak sites in a folded report: each must hold its one block of kBlockSize bytes,
// under its whole stack (kLevels + 2 frames, as LEAKWRAP_DEPTH keeps).
std::size_t checked_leak_sites(const std::string& folded_file) {
    std::ifstream in(folded_file);
    std::size_t sites = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.find("many_stacks_leak()") == std::string::npos) continue;
        ++sites;
        EXPECT_TRUE(line.ends_with(" " + std::to_string(kBlockSize))) << line;
        EXPECT_EQ(std::count(line.begin(), line.end(), ';'), kLevels + 1) << line;
    }
    return sites;
}

TEST(LiveRead, EveryReadOfAGrowingSiteTableIsConsistent) {
    Target target({paths::program("many_stacks"), "--paced"},
                  Environment::profiled().set("LEAKWRAP_DEPTH", std::to_string(kLevels + 2)));
    TemporaryDirectory directory;
    const std::string folded = (directory.path() / "stacks.folded").string();
    const std::string pid = std::to_string(target.pid());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    std::size_t reads = 0, reads_while_growing = 0, sites = 0;
    while (sites < kStacks && std::chrono::steady_clock::now() < deadline) {
        const Completed report = run_report({pid, "--format", "folded", "--top", "0", "-o", folded});
        if (report.exit_code != 0 && reads == 0) continue;  // the segment is not there yet
        ASSERT_EQ(report.exit_code, 0) << report.err;
        ++reads;
        const std::size_t read = checked_leak_sites(folded);
        EXPECT_GE(read, sites) << "read " << reads << " found fewer sites than the one before";
        if (read > 0 && read < kStacks) ++reads_while_growing;
        sites = std::max(sites, read);
        if (::testing::Test::HasFailure()) break;
    }
    EXPECT_EQ(sites, kStacks);
    EXPECT_GE(reads_while_growing, 2u) << "the reads did not catch the table growing";
    target.wait_ready();
    EXPECT_EQ(target.release_and_wait(), 0);
}

// Reads of a process whose eight threads free each other's blocks: a copy can catch a site whose
// frees moved before its allocations did, which 5a0a758's reader reported as "corrupt" in about
// one read in 700. Such a copy is read again: no read may warn. The sites' sum may differ from
// the totals by what was done while the copy was taken; JSON says both, and post mortem they
// are equal.
TEST(LiveRead, ABusyProcessIsNeverCalledCorruptAndItsSitesAddUpPostMortem) {
    Target target({paths::program("torture"), "600"}, Environment::profiled());
    const std::string pid = std::to_string(target.pid());
    std::size_t reads = 0;
    for (int attempt = 0; attempt < 300; ++attempt) {
        const Completed report = run_report({pid, "--format", "json", "--top", "0"});
        if (report.exit_code != 0 && reads == 0) continue;  // the segment is not there yet
        ASSERT_EQ(report.exit_code, 0) << report.err;
        ++reads;
        EXPECT_EQ(report.err, "") << "read " << reads;
        const nlohmann::json totals = nlohmann::json::parse(report.out).at("totals");
        EXPECT_TRUE(totals.contains("sites_live_blocks")) << totals.dump();
    }
    EXPECT_GE(reads, 250u);
    const pid_t gone = target.pid();
    EXPECT_EQ(target.kill_and_reap(), 128 + SIGKILL);
    const nlohmann::json totals = report_json(gone).at("totals");
    std::filesystem::remove(segment_path(gone));
    // A SIGKILL can land between a block's bin and its site: one operation per thread at most.
    EXPECT_LE(std::llabs(totals.at("sites_live_blocks").get<long long>() - totals.at("live_blocks").get<long long>()),
              10)
        << totals.dump();
}

}  // namespace
}  // namespace leakwrap::e2e
