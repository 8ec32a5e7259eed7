// --format pprof read by the real client, `go tool pprof`, as a user runs it (no -sample_index):
// it opens on live bytes, the biggest leak of alloc_kinds comes first with its exact bytes, and
// the totals are the report's. Inlined functions are lines of their address's location, which
// pprof shows as frames marked "(inline)".
#include <gtest/gtest.h>

#include <unistd.h>

#include <regex>
#include <stdexcept>

#include "go_pprof.h"
#include "ground_truth.h"
#include "harness.h"
#include "inline_leak_source.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

// Runs a test program under the preload and writes its pprof profile to `profile`; returns its
// JSON report, taken while the program waited like the profile.
nlohmann::json write_profile_of(const std::string& program, const std::string& profile) {
    e2e::Target target({e2e::paths::program(program)}, e2e::Environment::profiled());
    target.wait_ready();
    nlohmann::json report = e2e::report_json(target.pid());
    const e2e::Completed written = e2e::run_report({std::to_string(target.pid()), "--format", "pprof", "-o", profile});
    EXPECT_EQ(target.release_and_wait(), 0);
    if (written.exit_code != 0) throw std::runtime_error("--format pprof failed: " + written.err);
    return report;
}

TEST(Pprof, GoToolPprofRanksTheBiggestLeakFirstWithItsBytes) {
    if (!have_go()) GTEST_SKIP() << "no go in PATH (scripts/setup.sh installs golang-go)";
    TemporaryDirectory directory;
    const std::string profile = (directory.path() / "heap.pb.gz").string();
    const auto totals = write_profile_of("alloc_kinds", profile).at("totals");

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

// `go tool pprof -traces -lines` prints a frame as "make_buffer /src/inline_leak.cpp:23 (inline)":
// the name without its parameters, the file and line, and whether it was inlined.
std::regex printed_frame(const e2e::inline_leak::ExpectedFrame& frame) {
    const std::string name = std::regex_replace(frame.function.substr(0, frame.function.find('(')),
                                                std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    return std::regex(name + R"( \S*inline_leak\.cpp:)" + std::to_string(frame.line) +
                      (frame.inlined ? R"( \(inline\))" : ""));
}

TEST(Pprof, InlinedFunctionsAreLinesOfTheirAddressesLocation) {
    if (!have_go()) GTEST_SKIP() << "no go in PATH (scripts/setup.sh installs golang-go)";
    TemporaryDirectory directory;
    const std::string profile = (directory.path() / "heap.pb.gz").string();
    write_profile_of("inline_leak", profile);

    const e2e::Completed pprof = go_pprof({"-traces", "-lines", "-unit=B"}, profile, directory.path());
    if (wants_network(pprof)) GTEST_SKIP() << "go tool pprof wants the network here: " << pprof.err;
    ASSERT_EQ(pprof.exit_code, 0) << pprof.err;
    const auto traces = parse_pprof_traces(pprof.out);
    using namespace ground_truth::inline_leak;
    for (const auto& site : {e2e::inline_leak::direct_site(), e2e::inline_leak::nested_site()}) {
        const std::string value = std::to_string(kRequests * site.block_size) + "B";
        const auto trace =
            std::find_if(traces.begin(), traces.end(), [&](const PprofTrace& t) { return t.value == value; });
        ASSERT_NE(trace, traces.end()) << "no sample of " << value << " in\n" << pprof.out;
        ASSERT_GE(trace->frames.size(), site.frames.size()) << pprof.out;
        for (std::size_t i = 0; i < site.frames.size(); ++i)
            EXPECT_TRUE(std::regex_match(trace->frames[i], printed_frame(site.frames[i])))
                << "frame #" << i << " of the " << value << " sample: " << trace->frames[i];
    }
}

}  // namespace
}  // namespace leakwrap::ecosystem
