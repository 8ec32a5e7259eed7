// `watch --openmetrics-dir DIR` keeps DIR/leakwrap_<pid>.prom for node_exporter's textfile
// collector: valid OpenMetrics with the process's totals, and no temporary file left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "documentation.h"
#include "harness.h"
#include "openmetrics_parser.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

TEST(OpenMetrics, WatchKeepsAFileForTheTextfileCollector) {
    TemporaryDirectory directory;
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const auto totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed watch = e2e::run_report(
        {"watch", "--interval", "100ms", "--count", "3", "--out",
         (directory.path() / "series.jsonl").string(), "--openmetrics-dir",
         directory.path().string(), pid});
    EXPECT_EQ(target.release_and_wait(), 0);
    ASSERT_EQ(watch.exit_code, 0) << watch.err;

    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory.path()))
        files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    const std::string prom = "leakwrap_" + pid + ".prom";
    EXPECT_EQ(files, (std::vector<std::string>{prom, "series.jsonl"})) << "a temporary file left";
    const Exposition exposition = parse_openmetrics(read_file((directory.path() / prom).string()));
    const auto live = std::find_if(exposition.samples.begin(), exposition.samples.end(),
                                   [](const MetricSample& sample) {
                                       return sample.name == "leakwrap_live_bytes";
                                   });
    ASSERT_NE(live, exposition.samples.end());
    EXPECT_EQ(live->value, totals.at("live_bytes").get<double>());
}

}  // namespace
}  // namespace leakwrap::ecosystem
