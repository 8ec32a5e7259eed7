// `watch --openmetrics-dir DIR` keeps DIR/leakwrap_<pid>.prom for node_exporter's textfile
// collector: the Prometheus text format it reads (promtool agrees), with the process's totals,
// and no temporary file left behind.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "documentation.h"
#include "harness.h"
#include "openmetrics_parser.h"
#include "prometheus_support.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

TEST(OpenMetrics, WatchKeepsAFileForTheTextfileCollector) {
    TemporaryDirectory directory;
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const auto totals = e2e::report_json(target.pid()).at("totals");
    const e2e::Completed watch = e2e::run_report({"watch", "--interval", "100ms", "--count", "3", "--out",
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
    const std::string text = read_file((directory.path() / prom).string());
    if (have_prometheus()) {
        TemporaryDirectory scratch;
        const e2e::Completed check = promtool_check_metrics(text, scratch.path());
        EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    }
    const Exposition exposition = parse_prometheus_text(text);
    const auto live = std::find_if(exposition.samples.begin(), exposition.samples.end(),
                                   [](const MetricSample& sample) { return sample.name == "leakwrap_live_bytes"; });
    ASSERT_NE(live, exposition.samples.end());
    EXPECT_EQ(live->value, totals.at("live_bytes").get<double>());
}

std::vector<std::string> names_in(const std::filesystem::path& directory) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(directory))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// A shared textfile directory is writable by others, who can plant links under the names watch
// uses: the temporary name older versions used (it was predictable) and the final name. Neither
// may be written through.
TEST(OpenMetrics, WatchNeverWritesThroughALinkPlantedInTheDirectory) {
    TemporaryDirectory directory, elsewhere;
    e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());
    const std::string prom = "leakwrap_" + pid + ".prom";
    const std::string old_temporary = "." + prom + ".tmp";
    const std::string precious = "precious, not to be overwritten\n";
    for (const std::string& name : {old_temporary, prom}) {
        const auto victim = elsewhere.path() / ("victim-of-" + name);
        std::ofstream(victim) << precious;
        std::filesystem::create_symlink(victim, directory.path() / name);
    }
    const e2e::Completed watch = e2e::run_report({"watch", "--interval", "100ms", "--count", "2", "--out",
                                                  (elsewhere.path() / "series.jsonl").string(), "--openmetrics-dir",
                                                  directory.path().string(), pid});
    EXPECT_EQ(target.release_and_wait(), 0);
    ASSERT_EQ(watch.exit_code, 0) << watch.err;

    for (const std::string& name : {old_temporary, prom}) {
        const auto victim = elsewhere.path() / ("victim-of-" + name);
        EXPECT_TRUE(read_file(victim.string()) == precious) << victim << " written through " << name;
    }
    EXPECT_EQ(names_in(directory.path()), (std::vector<std::string>{old_temporary, prom})) << "a temporary file left";
    EXPECT_EQ(std::filesystem::read_symlink(directory.path() / old_temporary),
              elsewhere.path() / ("victim-of-" + old_temporary));
    // The link at the final name was replaced by the file, readable like any file made with the
    // umask, for a collector running as another user.
    struct stat status {};
    ASSERT_EQ(lstat((directory.path() / prom).c_str(), &status), 0);
    EXPECT_TRUE(S_ISREG(status.st_mode));
    const mode_t mask = umask(0);
    umask(mask);
    EXPECT_EQ(status.st_mode & 0777, 0666 & ~mask);
    const Exposition exposition = parse_prometheus_text(read_file((directory.path() / prom).string()));
    EXPECT_TRUE(std::any_of(exposition.samples.begin(), exposition.samples.end(),
                            [](const MetricSample& sample) { return sample.name == "leakwrap_live_bytes"; }));
}

// Another user's directory under the file's name, empty or not, costs the samples' files one
// warning, never the watch: its series is written whole.
TEST(OpenMetrics, WatchGoesOnPastADirectoryPlantedUnderTheFilesName) {
    for (const bool empty : {true, false}) {
        TemporaryDirectory directory, elsewhere;
        e2e::Target target({e2e::paths::program("alloc_kinds")}, e2e::Environment::profiled());
        target.wait_ready();
        const std::string pid = std::to_string(target.pid());
        const auto planted = directory.path() / ("leakwrap_" + pid + ".prom");
        std::filesystem::create_directory(planted);
        if (!empty) std::ofstream(planted / "inside") << "x";
        const auto series = elsewhere.path() / "series.jsonl";
        const e2e::Completed watch =
            e2e::run_report({"watch", "--interval", "100ms", "--count", "3", "--out", series.string(),
                             "--openmetrics-dir", directory.path().string(), pid});
        EXPECT_EQ(target.release_and_wait(), 0);
        EXPECT_EQ(watch.exit_code, 0) << watch.err;
        EXPECT_EQ(std::count(watch.err.begin(), watch.err.end(), '\n'), 1) << watch.err;
        EXPECT_NE(watch.err.find("is a directory"), std::string::npos) << watch.err;
        std::ifstream lines(series);
        EXPECT_EQ(std::count(std::istreambuf_iterator<char>(lines), std::istreambuf_iterator<char>(), '\n'), 3);
        EXPECT_TRUE(std::filesystem::is_directory(planted));
        EXPECT_EQ(names_in(directory.path()), std::vector<std::string>{planted.filename().string()})
            << "a temporary file left";
    }
}

}  // namespace
}  // namespace leakwrap::ecosystem
