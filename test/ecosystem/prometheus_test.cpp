// The textfile that `watch --openmetrics-dir` keeps, end to end through Debian's node_exporter
// (textfile collector) into Debian's Prometheus, both on loopback: the leak's series arrives with
// the report's value, and the counters arrive typed as counters.
#include <gtest/gtest.h>

#include <filesystem>

#include "ground_truth.h"
#include "harness.h"
#include "prometheus_support.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

double value_of(const nlohmann::json& result) { return std::stod(result.at(0).at("value").at(1).get<std::string>()); }

TEST(Prometheus, ScrapesTheTextfileThroughNodeExporterWithItsTypes) {
    if (!have_prometheus())
        GTEST_SKIP() << "no prometheus, prometheus-node-exporter or promtool (scripts/setup.sh installs them)";
    TemporaryDirectory directory;
    const auto textfiles = directory.path() / "textfile";
    std::filesystem::create_directory(textfiles);
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const auto totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed watch =
        e2e::run_report({"watch", "--interval", "100ms", "--count", "1", "--out",
                         (directory.path() / "series.jsonl").string(), "--openmetrics-dir", textfiles.string(), pid});
    ASSERT_EQ(watch.exit_code, 0) << watch.err;

    NodeExporter node_exporter(textfiles);
    Prometheus prometheus({"127.0.0.1:" + std::to_string(node_exporter.port())}, directory.path());
    const auto leak =
        prometheus.query_until_found("sum(leakwrap_site_live_bytes{pid=\"" + pid + "\",function=\"leak_malloc\"})");
    EXPECT_EQ(value_of(leak), (kMallocCount - kMallocFreed) * kMallocSize) << leak;
    const auto allocations = prometheus.query_until_found("leakwrap_allocations_total{pid=\"" + pid + "\"}");
    EXPECT_EQ(value_of(allocations), totals.at("allocs").get<double>()) << allocations;

    // node_exporter passes on the types it parsed: a counter that lost its TYPE arrives untyped.
    const auto counter = prometheus.metadata("leakwrap_allocations_total");
    ASSERT_FALSE(counter.empty()) << "no metadata for leakwrap_allocations_total";
    EXPECT_EQ(counter.at(0).at("type"), "counter") << counter;
    const auto gauge = prometheus.metadata("leakwrap_site_live_bytes");
    ASSERT_FALSE(gauge.empty()) << "no metadata for leakwrap_site_live_bytes";
    EXPECT_EQ(gauge.at(0).at("type"), "gauge") << gauge;
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::ecosystem
