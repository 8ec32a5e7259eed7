// --format openmetrics and --format prometheus on a real program: a strict parser accepts them,
// promtool accepts the Prometheus text, and their numbers are the report's: totals, size-class
// bins, and the leaking functions' rows, each named by its own frame, not the C++ runtime's.
#include <gtest/gtest.h>

#include <leakwrap/segment_layout.h>

#include <algorithm>

#include "ground_truth.h"
#include "harness.h"
#include "openmetrics_parser.h"
#include "prometheus_support.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

using namespace ground_truth::alloc_kinds;

struct Profiled {
    pid_t pid = 0;
    nlohmann::json totals;
    Exposition top_rows, every_row;
    std::string prometheus_text;  // --format prometheus --top 0
};

Profiled profile_alloc_kinds() {
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    Profiled profiled{target.pid(), e2e::report_json(target.pid()).at("totals"), {}, {}, {}};
    const std::string pid = std::to_string(target.pid());
    const e2e::Completed top_rows = e2e::run_report({pid, "--format", "openmetrics"});
    const e2e::Completed every_row = e2e::run_report({pid, "--format", "openmetrics", "--top", "0"});
    const e2e::Completed prometheus = e2e::run_report({pid, "--format", "prometheus", "--top", "0"});
    EXPECT_EQ(target.release_and_wait(), 0);
    EXPECT_EQ(top_rows.exit_code, 0) << top_rows.err;
    EXPECT_EQ(every_row.exit_code, 0) << every_row.err;
    EXPECT_EQ(prometheus.exit_code, 0) << prometheus.err;
    profiled.prometheus_text = prometheus.out;
    profiled.top_rows = parse_openmetrics(top_rows.out);
    profiled.every_row = parse_openmetrics(every_row.out);
    return profiled;
}

std::vector<MetricSample> samples_named(const Exposition& exposition, const std::string& name) {
    std::vector<MetricSample> samples;
    for (const auto& sample : exposition.samples)
        if (sample.name == name) samples.push_back(sample);
    return samples;
}

double only_value(const Exposition& exposition, const std::string& name) {
    const auto samples = samples_named(exposition, name);
    EXPECT_EQ(samples.size(), 1u) << name;
    return samples.empty() ? -1 : samples[0].value;
}

double sum_of(const std::vector<MetricSample>& samples) {
    double sum = 0;
    for (const auto& sample : samples) sum += sample.value;
    return sum;
}

TEST(OpenMetrics, TotalsAreTheReportsAndEverySampleNamesThePid) {
    const Profiled profiled = profile_alloc_kinds();
    const Exposition& exposition = profiled.top_rows;
    const auto total = [&](const char* name) { return profiled.totals.at(name).get<double>(); };
    EXPECT_EQ(only_value(exposition, "leakwrap_live_bytes"), total("live_bytes"));
    EXPECT_EQ(only_value(exposition, "leakwrap_live_blocks"), total("live_blocks"));
    EXPECT_EQ(only_value(exposition, "leakwrap_allocations_total"), total("allocs"));
    EXPECT_EQ(only_value(exposition, "leakwrap_frees_total"), total("frees"));
    EXPECT_EQ(exposition.families.at("leakwrap_live_bytes").unit, "bytes");
    EXPECT_EQ(exposition.families.at("leakwrap_allocations").type, "counter");
    for (const auto& sample : exposition.samples)
        EXPECT_EQ(sample.labels.at("pid"), std::to_string(profiled.pid)) << sample.name;
}

TEST(OpenMetrics, BinsAddUpToTheLiveTotalAndHoldTheLeakInItsClass) {
    const Profiled profiled = profile_alloc_kinds();
    const auto bins = samples_named(profiled.top_rows, "leakwrap_bin_live_bytes");
    EXPECT_EQ(sum_of(bins), profiled.totals.at("live_bytes").get<double>());
    const std::string leak_class = std::to_string(layout::size_class_limit(layout::size_class_of(kMallocSize)));
    const auto in_class = std::find_if(
        bins.begin(), bins.end(), [&](const MetricSample& bin) { return bin.labels.at("class_limit") == leak_class; });
    ASSERT_NE(in_class, bins.end()) << "no bin with class_limit=" << leak_class;
    EXPECT_GE(in_class->value, (kMallocCount - kMallocFreed) * kMallocSize);
}

TEST(OpenMetrics, SitesAreTheTopRowsAndTheLeakHasItsBytesAndBlocks) {
    const Profiled profiled = profile_alloc_kinds();
    EXPECT_LE(samples_named(profiled.top_rows, "leakwrap_site_live_bytes").size(), 20u);

    const auto sites = samples_named(profiled.every_row, "leakwrap_site_live_bytes");
    EXPECT_EQ(sum_of(sites), profiled.totals.at("live_bytes").get<double>());
    double leak_bytes = 0, leak_blocks = 0;
    for (const auto& sample : sites)
        if (sample.labels.at("function") == "leak_malloc") leak_bytes += sample.value;
    for (const auto& sample : samples_named(profiled.every_row, "leakwrap_site_live_blocks"))
        if (sample.labels.at("function") == "leak_malloc") leak_blocks += sample.value;
    EXPECT_EQ(leak_bytes, (kMallocCount - kMallocFreed) * kMallocSize);
    EXPECT_EQ(leak_blocks, kMallocCount - kMallocFreed);
}

// The innermost frame of `new char[]` is operator new[], in libstdc++: the row is named after the
// function that called it.
TEST(OpenMetrics, SitesAreNamedByTheirInnermostFrameOutsideTheRuntimes) {
    const Profiled profiled = profile_alloc_kinds();
    double bytes = 0;
    for (const auto& sample : samples_named(profiled.every_row, "leakwrap_site_live_bytes")) {
        EXPECT_FALSE(sample.labels.at("function").starts_with("operator new")) << sample.labels.at("function");
        if (sample.labels.at("function") == "leak_cxx_new_array") bytes += sample.value;
    }
    EXPECT_EQ(bytes, kNewCharArrayCount * kNewCharArrayLength + kNewIntArrayCount * kNewIntArrayLength * sizeof(int));
}

// What node_exporter's textfile collector and Prometheus read: counters named and typed _total,
// HELP and TYPE for every family, no OpenMetrics-only lines; every sample names its process.
TEST(PrometheusText, PassesPromtoolAndKeepsTheReportsNumbersAndTypes) {
    const Profiled profiled = profile_alloc_kinds();
    if (have_prometheus()) {
        TemporaryDirectory directory;
        const e2e::Completed check = promtool_check_metrics(profiled.prometheus_text, directory.path());
        EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    }
    const Exposition exposition = parse_prometheus_text(profiled.prometheus_text);
    EXPECT_EQ(exposition.families.at("leakwrap_allocations_total").type, "counter");
    EXPECT_EQ(exposition.families.at("leakwrap_frees_total").type, "counter");
    EXPECT_EQ(exposition.families.at("leakwrap_live_bytes").type, "gauge");
    EXPECT_EQ(only_value(exposition, "leakwrap_allocations_total"), profiled.totals.at("allocs").get<double>());
    EXPECT_EQ(only_value(exposition, "leakwrap_live_bytes"), profiled.totals.at("live_bytes").get<double>());
    double leak_bytes = 0;
    for (const auto& sample : samples_named(exposition, "leakwrap_site_live_bytes"))
        if (sample.labels.at("function") == "leak_malloc") leak_bytes += sample.value;
    EXPECT_EQ(leak_bytes, (kMallocCount - kMallocFreed) * kMallocSize);
    for (const auto& sample : exposition.samples) {
        EXPECT_EQ(sample.labels.at("pid"), std::to_string(profiled.pid)) << sample.name;
        EXPECT_TRUE(sample.labels.at("exe").ends_with("/alloc_kinds")) << sample.labels.at("exe");
        EXPECT_TRUE(sample.labels.at("command").ends_with("/alloc_kinds")) << sample.labels.at("command");
    }
}

TEST(OpenMetricsParser, RejectsWhatTheSpecificationForbids) {
    const std::string family = "# TYPE a gauge\n";
    for (const std::string& text : std::vector<std::string>{
             family + "a 1\n",                                              // no # EOF
             family + "a 1\n# EOF\na 2\n",                                  // something after # EOF
             "a 1\n# EOF\n",                                                // no TYPE
             family + "b 1\n# EOF\n",                                       // sample of another family
             family + "a{x=\"1\",x=\"2\"} 1\n# EOF\n",                      // label twice
             family + "a{x=\"\\t\"} 1\n# EOF\n",                            // invalid escape
             family + "a{0x=\"1\"} 1\n# EOF\n",                             // invalid label name
             family + "a 1\na 2\n# EOF\n",                                  // series twice
             family + "a 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\n# EOF\n",  // family twice
             "# TYPE a_total counter\na_total 1\n# EOF\n",                  // counter sample a_total_total
             "# TYPE a counter\na_total -1\n# EOF\n",                       // negative counter
             "# TYPE a gauge\n# UNIT a bytes\na 1\n# EOF\n",                // unit not the suffix
             family + "# just a comment\na 1\n# EOF\n",                     // plain comment
             family + "a  1\n# EOF\n",                                      // two spaces
         })
        EXPECT_THROW(parse_openmetrics(text), OpenMetricsError) << text;
    for (const std::string& text : std::vector<std::string>{
             "# TYPE a gauge\na 1\n# EOF\n",           // OpenMetrics' end
             "# TYPE a gauge\n# UNIT a bytes\na 1\n",  // UNIT
             "# TYPE a counter\na_total 1\n",          // counter family without _total
             "# HELP a x\n# TYPE b gauge\na 1\n",      // sample of another family
         })
        EXPECT_THROW(parse_prometheus_text(text), OpenMetricsError) << text;
    EXPECT_NO_THROW(
        parse_prometheus_text("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\"} 1\n# TYPE b gauge\nb 2\n"));
    EXPECT_NO_THROW(
        parse_openmetrics("# TYPE a_bytes gauge\n# UNIT a_bytes bytes\n# HELP a_bytes A \\\\ b.\n"
                          "a_bytes{x=\"q\\\"\\n\\\\\"} 1\n# TYPE c counter\nc_total 2\n# EOF\n"));
}

}  // namespace
}  // namespace leakwrap::ecosystem
