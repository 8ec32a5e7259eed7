// --format pprof read by the real client, `go tool pprof`, as a user runs it (no -sample_index):
// it opens on live bytes, the biggest leak of alloc_kinds comes first with its exact bytes, and
// the totals are the report's.
#include <gtest/gtest.h>

#include <unistd.h>

#include "go_pprof.h"
#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

TEST(Pprof, GoToolPprofRanksTheBiggestLeakFirstWithItsBytes) {
    if (!have_go()) GTEST_SKIP() << "no go in PATH (scripts/setup.sh installs golang-go)";
    TemporaryDirectory directory;
    const std::string profile = (directory.path() / "heap.pb.gz").string();

    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const auto totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed written =
        e2e::run_report({std::to_string(target.pid()), "--format", "pprof", "-o", profile});
    EXPECT_EQ(target.release_and_wait(), 0);
    ASSERT_EQ(written.exit_code, 0) << written.err;

    const e2e::Completed pprof = go_pprof_top(profile, directory.path());
    if (wants_network(pprof)) GTEST_SKIP() << "go tool pprof wants the network here: " << pprof.err;
    ASSERT_EQ(pprof.exit_code, 0) << pprof.err;

    const PprofTop top = parse_pprof_top(pprof.out);
    EXPECT_EQ(top.sample_type, "live_space") << pprof.out;
    EXPECT_EQ(top.total_bytes, totals.at("live_bytes").get<unsigned long long>()) << pprof.out;
    // pvalloc rounds each block up to whole pages, which makes it the biggest leak.
    const auto page = static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
    const unsigned long long pvalloc_bytes = kPvallocCount * ((kPvallocSize + page - 1) / page * page);
    ASSERT_GT(pvalloc_bytes, kVallocCount * kVallocSize);
    ASSERT_FALSE(top.rows.empty()) << pprof.out;
    EXPECT_EQ(top.rows[0].function, "leak_pvalloc") << pprof.out;
    EXPECT_EQ(top.rows[0].flat_bytes, pvalloc_bytes) << pprof.out;
}

}  // namespace
}  // namespace leakwrap::ecosystem
