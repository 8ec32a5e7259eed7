// --format pprof read by the real client, `go tool pprof`: the biggest leak of alloc_kinds comes
// first with its exact bytes, and the totals are the report's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <regex>
#include <sstream>

#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

// Go must work offline and leave nothing outside the test's directory.
e2e::Environment offline_go(const std::filesystem::path& home) {
    return e2e::Environment::bare()
        .set("HOME", home.string())
        .set("GOCACHE", (home / "cache").string())
        .set("GOPATH", (home / "path").string())
        .set("GOFLAGS", "-mod=mod")
        .set("GOPROXY", "off");
}

struct TopRow {
    unsigned long long flat_bytes;
    std::string function;
};

// `go tool pprof -top -unit=B` rows: "   16384B 30.49% 30.49%    16384B 30.49%  leak_pvalloc".
std::vector<TopRow> top_rows(const std::string& output, unsigned long long& total_bytes) {
    static const std::regex total(R"(Showing nodes accounting for \d+B, [\d.]+% of (\d+)B total)");
    static const std::regex row(R"(^\s*(\d+)B\s+[\d.]+%\s+[\d.]+%\s+\d+B\s+[\d.]+%\s+(.+)$)");
    std::vector<TopRow> rows;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        std::smatch match;
        if (std::regex_search(line, match, total)) total_bytes = std::stoull(match[1]);
        else if (std::regex_match(line, match, row)) rows.push_back({std::stoull(match[1]), match[2]});
    }
    return rows;
}

TEST(Pprof, GoToolPprofRanksTheBiggestLeakFirstWithItsBytes) {
    if (std::string(LEAKWRAP_GO).empty())
        GTEST_SKIP() << "no go in PATH (scripts/setup.sh installs golang-go)";
    TemporaryDirectory directory;
    const std::string profile = (directory.path() / "heap.pb.gz").string();

    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const auto totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed written =
        e2e::run_report({std::to_string(target.pid()), "--format", "pprof", "-o", profile});
    EXPECT_EQ(target.release_and_wait(), 0);
    ASSERT_EQ(written.exit_code, 0) << written.err;

    const e2e::Completed pprof =
        e2e::run({LEAKWRAP_GO, "tool", "pprof", "-top", "-unit=B", "-sample_index=live_space", profile},
                 offline_go(directory.path()));
    if (pprof.exit_code != 0 && (pprof.err.find("dial tcp") != std::string::npos ||
                                 pprof.err.find("GOPROXY") != std::string::npos))
        GTEST_SKIP() << "go tool pprof wants the network here: " << pprof.err;
    ASSERT_EQ(pprof.exit_code, 0) << pprof.err;

    unsigned long long total_bytes = 0;
    const auto rows = top_rows(pprof.out, total_bytes);
    EXPECT_EQ(total_bytes, totals.at("live_bytes").get<unsigned long long>()) << pprof.out;
    // pvalloc rounds each block up to whole pages, which makes it the biggest leak.
    const auto page = static_cast<unsigned long long>(sysconf(_SC_PAGESIZE));
    const unsigned long long pvalloc_bytes = kPvallocCount * ((kPvallocSize + page - 1) / page * page);
    ASSERT_GT(pvalloc_bytes, kVallocCount * kVallocSize);
    ASSERT_FALSE(rows.empty()) << pprof.out;
    EXPECT_EQ(rows[0].function, "leak_pvalloc") << pprof.out;
    EXPECT_EQ(rows[0].flat_bytes, pvalloc_bytes) << pprof.out;
}

}  // namespace
}  // namespace leakwrap::ecosystem
