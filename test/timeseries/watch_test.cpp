// watch, suspects, diff and plot as a user runs them: steady_leak under the preload, watched for
// kSamples samples, then the real leakwrap-report on what was recorded. Every check is on the
// data (which site grew, which class, which stayed), never on how long anything took.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "ground_truth.h"
#include "harness.h"
#include "png_pixels.h"
#include "steady_leak.h"
#include "temporary_directory.h"

#include <leakwrap/segment_layout.h>

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kPeriodMs = 20;
constexpr std::size_t kSamples = 12;
constexpr const char* kInterval = "200ms";
constexpr std::size_t kReports = 3;

void write_file(const fs::path& path, const std::string& content) { std::ofstream(path) << content; }

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<json> read_lines(const fs::path& path) {
    std::vector<json> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
}

// `leakwrap-report ARGUMENTS`, which must succeed; its stdout.
std::string report_tool(const std::vector<std::string>& arguments) {
    const Completed completed = run_report(arguments);
    if (completed.exit_code != 0)
        throw std::runtime_error("leakwrap-report " + arguments.front() + " exited " +
                                 std::to_string(completed.exit_code) + ": " + completed.err);
    return completed.out;
}

// With map_kib, every tick also maps and touches that much memory outside malloc.
std::vector<std::string> steady_leak_command(std::size_t map_kib = 0) {
    std::vector<std::string> argv{paths::program("steady_leak"), std::to_string(kPeriodMs)};
    if (map_kib > 0) argv.insert(argv.end(), {"0", std::to_string(map_kib)});
    return argv;
}

std::vector<std::string> watch_command(pid_t pid, const fs::path& series, const std::vector<std::string>& limits) {
    std::vector<std::string> argv{paths::report_tool, "watch", std::to_string(pid), "--interval",
                                  kInterval,          "--out", series.string()};
    argv.insert(argv.end(), limits.begin(), limits.end());
    return argv;
}

// Starts steady_leak's ticks once the watch has its first sample, so that the series sees every
// site grow from nothing.
void start_ticks_after_first_sample(Target& watch, pid_t steady_leak) {
    watch.wait_ready("sample 1:");
    kill(steady_leak, SIGUSR1);
}

// steady_leak watched for kSamples samples, then kReports reports of it a few ticks apart.
struct WatchedRun {
    TemporaryDirectory directory;
    fs::path series = directory.path() / "series.jsonl";
    std::vector<json> lines;
    std::vector<fs::path> reports;

    explicit WatchedRun(std::size_t map_kib = 0) {
        Target program(steady_leak_command(map_kib), Environment::profiled());
        program.wait_ready();
        Target watch(watch_command(program.pid(), series, {"--count", std::to_string(kSamples)}), Environment::bare());
        start_ticks_after_first_sample(watch, program.pid());
        if (watch.release_and_wait() != 0) throw std::runtime_error("watch failed");
        for (std::size_t i = 0; i < kReports; ++i) {
            if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5 * kPeriodMs));
            reports.push_back(directory.path() / ("report" + std::to_string(i) + ".json"));
            write_file(reports.back(), report_json(program.pid()).dump());
        }
        if (program.release_and_wait() != 0) throw std::runtime_error("steady_leak failed");
        lines = read_lines(series);
    }
};

// One watched run for all the tests of this file that run in one process.
const WatchedRun& watched_run() {
    static const WatchedRun run;
    return run;
}

// steady_leak mapping kMapKib outside malloc every tick: RSS grows, the tracked heap barely.
constexpr std::size_t kMapKib = 256;
const WatchedRun& mapping_run() {
    static const WatchedRun run(kMapKib);
    return run;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

std::vector<std::string> labels_of(const json& rows) {
    std::vector<std::string> labels;
    for (const json& row : rows) labels.push_back(row.at("label").get<std::string>());
    return labels;
}

const json* site_labelled(const json& sites, std::string_view function) {
    for (const json& site : sites)
        if (contains(site.at("label").get<std::string>(), function)) return &site;
    return nullptr;
}

const json* bin_limited_to(const json& line, uint64_t limit) {
    for (const json& bin : line.at("bins"))
        if (bin.at("limit") == limit) return &bin;
    return nullptr;
}

uint64_t live_bytes_of(const json* row) { return row ? row->at("live_bytes").get<uint64_t>() : 0; }

// The first line in which the cache holds all it ever will: from there on it stays flat.
std::size_t first_line_with_full_cache(const std::vector<json>& lines) {
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (live_bytes_of(site_labelled(lines[i].at("sites"), "fill_bounded_cache")) == steady_leak::kCacheFullBytes)
            return i;
    throw std::runtime_error("the cache never filled up during the watch");
}

TEST(Watch, WritesOneLabelledLinePerSample) {
    const WatchedRun& watched = watched_run();
    ASSERT_EQ(watched.lines.size(), kSamples);
    for (std::size_t i = 0; i < watched.lines.size(); ++i) {
        const json& line = watched.lines[i];
        if (i > 0) {
            EXPECT_GT(line.at("t").get<double>(), watched.lines[i - 1].at("t").get<double>());
        }
        EXPECT_EQ(line.at("pid"), watched.lines.front().at("pid"));
        EXPECT_TRUE(line.at("totals").contains("live_bytes"));
        for (const json& site : line.at("sites")) {
            EXPECT_GE(site.at("live_bytes").get<uint64_t>(), 4096u) << "below the default --min-bytes";
            EXPECT_FALSE(site.at("label").get<std::string>().empty());
        }
        EXPECT_FALSE(line.contains("labels")) << "each site carries its label";
    }
    const json* leak = site_labelled(watched.lines.back().at("sites"), "leak_steadily");
    ASSERT_NE(leak, nullptr);
    EXPECT_TRUE(contains(leak->at("label").get<std::string>(), "steady_leak.cpp:")) << leak->at("label");
}

TEST(Watch, BinsShowTheLeaksSizeClassGrowing) {
    const WatchedRun& watched = watched_run();
    constexpr uint64_t kLeakClassLimit = 320;
    static_assert(layout::size_class_limit(layout::size_class_of(steady_leak::kLeakSize)) == kLeakClassLimit);
    uint64_t previous = 0;
    for (const json& line : watched.lines) {
        const uint64_t live = live_bytes_of(bin_limited_to(line, kLeakClassLimit));
        EXPECT_GE(live, previous) << "the leak's class never shrinks";
        EXPECT_EQ(live % steady_leak::kLeakSize, 0u) << "only the leak allocates in this class";
        previous = live;
    }
    EXPECT_GT(previous, live_bytes_of(bin_limited_to(watched.lines.front(), kLeakClassLimit)));
    EXPECT_EQ(live_bytes_of(bin_limited_to(watched.lines.back(), 1024)), steady_leak::kCacheFullBytes);
}

TEST(Suspects, RankOnlyTheSteadyLeakAsALeakAndTheCacheAsAPlateau) {
    const WatchedRun& watched = watched_run();
    const json ranking =
        json::parse(report_tool({"suspects", watched.series.string(), "--format", "json", "--top", "0"}));
    EXPECT_EQ(ranking.at("samples"), kSamples);
    const json& suspects = ranking.at("suspects");
    std::vector<std::string> leaks;
    for (const json& suspect : suspects)
        if (suspect.at("class") == "leak") leaks.push_back(suspect.at("label"));
    ASSERT_EQ(leaks.size(), 1u) << suspects.dump(2);
    EXPECT_TRUE(contains(leaks.front(), "leak_steadily")) << leaks.front();
    EXPECT_EQ(suspects.front().at("label"), leaks.front()) << "leaks come first";
    const json* cache = site_labelled(suspects, "fill_bounded_cache");
    ASSERT_NE(cache, nullptr) << suspects.dump(2);
    EXPECT_EQ(cache->at("class"), "plateau") << cache->dump(2);

    const std::string text = report_tool({"suspects", watched.series.string()});
    EXPECT_TRUE(contains(text, "leak_steadily")) << text;
}

TEST(Suspects, RefuseASeriesOfFewerThanThreeSamples) {
    const WatchedRun& watched = watched_run();
    const fs::path short_series = watched.directory.path() / "two-samples.jsonl";
    write_file(short_series, watched.lines[0].dump() + "\n" + watched.lines[1].dump() + "\n");
    const Completed completed = run_report({"suspects", short_series.string()});
    EXPECT_EQ(completed.exit_code, 1);
    EXPECT_TRUE(contains(completed.err, "at least 3 samples")) << completed.err;
}

TEST(Suspects, OnAReportSayWhichFileTheyWantInOneLine) {
    const WatchedRun& watched = watched_run();
    const fs::path pretty = watched.directory.path() / "pretty-report.json";
    write_file(pretty, json::parse(read_file(watched.reports[0])).dump(2));
    for (const fs::path& report : {watched.reports[0], pretty}) {
        const Completed completed = run_report({"suspects", report.string()});
        EXPECT_EQ(completed.exit_code, 1);
        EXPECT_EQ(completed.err, "leakwrap-report: error: " + report.string() +
                                     " is a report, not a series: give the file that "
                                     "`leakwrap-report watch PID --out FILE` writes\n");
    }
}

TEST(Diff, RetainedViewOfThreeReportsListsOnlyTheLeak) {
    const WatchedRun& watched = watched_run();
    const json diff = json::parse(report_tool({"diff", watched.reports[0].string(), watched.reports[1].string(),
                                               watched.reports[2].string(), "--format", "json"}));
    EXPECT_EQ(diff.at("matching"), "stack") << "reports name their stacks";
    const std::vector<std::string> retained = labels_of(diff.at("retained_sites"));
    ASSERT_EQ(retained.size(), 1u) << diff.dump(2);
    EXPECT_TRUE(contains(retained.front(), "leak_steadily")) << retained.front();
    const json& retained_bins = diff.at("retained_bins");
    ASSERT_EQ(retained_bins.size(), 1u) << diff.dump(2);
    EXPECT_EQ(retained_bins.front().at("label"), "≤320 B");
}

TEST(Diff, RetainedViewOfThreeSeriesLinesListsOnlyTheLeak) {
    const WatchedRun& watched = watched_run();
    const std::size_t a = first_line_with_full_cache(watched.lines), c = watched.lines.size() - 1;
    ASSERT_GE(c - a, 2u) << "the cache filled up too late in the watch to take three snapshots";
    std::vector<std::string> files;
    for (const std::size_t index : {a, (a + c) / 2, c}) {
        files.push_back((watched.directory.path() / ("line" + std::to_string(index) + ".json")).string());
        write_file(files.back(), watched.lines[index].dump());
    }
    const json diff = json::parse(report_tool({"diff", files[0], files[1], files[2], "--format", "json"}));
    const std::vector<std::string> retained = labels_of(diff.at("retained_sites"));
    ASSERT_EQ(retained.size(), 1u) << diff.dump(2);
    EXPECT_TRUE(contains(retained.front(), "leak_steadily")) << retained.front();
}

TEST(Diff, OfTwoReportsPutsTheLeakFirst) {
    const WatchedRun& watched = watched_run();
    const json diff = json::parse(
        report_tool({"diff", watched.reports.front().string(), watched.reports.back().string(), "--format", "json"}));
    ASSERT_FALSE(diff.at("sites").empty());
    EXPECT_TRUE(contains(diff.at("sites").front().at("label"), "leak_steadily")) << diff.dump(2);
    EXPECT_GT(diff.at("sites").front().at("live_bytes_change").get<int64_t>(), 0);
    ASSERT_FALSE(diff.at("bins").empty());
    EXPECT_EQ(diff.at("bins").front().at("label"), "≤320 B");
    const std::string text = report_tool({"diff", watched.reports.front().string(), watched.reports.back().string()});
    EXPECT_TRUE(contains(text, "leak_steadily")) << text;
}

TEST(Diff, SeriesLinesOfTwoRunsMatchTheLeakByItsStack) {
    // Two processes of the same program, as before and after a restart: ids may differ, stacks not.
    const std::vector<std::string> files = {(watched_run().directory.path() / "run-a.json").string(),
                                            (watched_run().directory.path() / "run-b.json").string()};
    // Halfway through one run against the end of the other: the leak holds less in the first.
    const json& before = watched_run().lines[kSamples / 2];
    const json& after = mapping_run().lines.back();
    write_file(files[0], before.dump());
    write_file(files[1], after.dump());
    ASSERT_NE(before.at("pid"), after.at("pid"));
    const json diff = json::parse(report_tool({"diff", files[0], files[1], "--format", "json", "--top", "0"}));
    EXPECT_EQ(diff.at("matching"), "stack");
    std::size_t leaks = 0;
    for (const json& row : diff.at("sites")) {
        if (!contains(row.at("label"), "leak_steadily")) continue;
        ++leaks;
        EXPECT_GT(row.at("live_bytes")[0].get<uint64_t>(), 0u) << row.dump();
        EXPECT_GT(row.at("live_bytes")[1].get<uint64_t>(), 0u) << row.dump();
    }
    EXPECT_EQ(leaks, 1u) << "one row for the leak's stack in both runs: " << diff.dump(2);
    for (const json& line : {before, after})
        for (const json& site : line.at("sites")) EXPECT_TRUE(site.contains("stack")) << site.dump();
}

TEST(Plot, DrawsTheLeakAndItsSizeClass) {
    const WatchedRun& watched = watched_run();
    const fs::path svg = watched.directory.path() / "leak.svg", html = watched.directory.path() / "leak.html",
                   png = watched.directory.path() / "leak.png";
    report_tool({"plot", watched.series.string(), "-o", svg.string(), "--html", html.string()});
    const std::string chart = read_file(svg);
    EXPECT_TRUE(contains(chart, "leak_steadily")) << "the legend names the leak";
    EXPECT_TRUE(contains(chart, "fill_bounded_cache")) << "and the cache, which grew too";
    EXPECT_TRUE(contains(chart, "size class ≤320 B")) << "the second panel has the leak's class";
    const std::string page = read_file(html);
    EXPECT_TRUE(contains(page, "<svg")) << "the chart is inline";
    EXPECT_TRUE(contains(page, "<tr class=\"leak\">")) << "and the suspects table under it";

    ASSERT_NE(std::string(LEAKWRAP_RSVG_CONVERT), "")
        << "rsvg-convert is missing: install librsvg2-bin (scripts/setup.sh)";
    const Completed rendered = run({LEAKWRAP_RSVG_CONVERT, svg.string(), "-o", png.string()}, Environment::bare());
    ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
    const timeseries::PngPixels picture = timeseries::read_png(png);
    EXPECT_GE(picture.width, 900u);
    EXPECT_GE(picture.height, 500u);
    const std::set<timeseries::Rgb> colours(picture.pixels.begin(), picture.pixels.end());
    EXPECT_GE(colours.size(), 8u) << "axes, text, grid and the series' colours";
    constexpr timeseries::Rgb kFirstSeriesColour{0x4e, 0x79, 0xa7};  // the site that grew most
    EXPECT_GE(std::count(picture.pixels.begin(), picture.pixels.end(), kFirstSeriesColour), 500) << "the leak's line";
}

TEST(Watch, EndsCleanlyWhenTheProcessExits) {
    const TemporaryDirectory directory;
    const fs::path series = directory.path() / "series.jsonl";
    Target program(steady_leak_command(), Environment::profiled());
    program.wait_ready();
    const std::string pid = std::to_string(program.pid());
    Target watch(watch_command(program.pid(), series, {}), Environment::bare());  // until the exit
    start_ticks_after_first_sample(watch, program.pid());
    EXPECT_EQ(program.release_and_wait(), 0);  // a normal exit, which removes the segment
    watch.wait_ready("stopped, process " + pid + " exited", 20s);
    EXPECT_EQ(watch.release_and_wait(), 0);
    EXPECT_GE(read_lines(series).size(), 1u);
}

// The ticks steady_leak made between two series lines, counted by its leak's allocations.
uint64_t ticks_between(const json& first, const json& last) {
    const auto allocs = [](const json& line) {
        const json* leak = site_labelled(line.at("sites"), "leak_steadily");
        return leak ? leak->at("allocs").get<uint64_t>() : 0;
    };
    return (allocs(last) - allocs(first)) / steady_leak::kLeaksPerTick;
}

TEST(Memory, EverySeriesLineHasTheRssAndTheSegmentNextToTheTrackedBytes) {
    for (const json& line : watched_run().lines) {
        const json& memory = line.at("memory");
        EXPECT_EQ(memory.at("rss_bytes"), memory.at("rss_anon_bytes").get<uint64_t>() +
                                              memory.at("rss_file_bytes").get<uint64_t>() +
                                              memory.at("rss_shmem_bytes").get<uint64_t>());
        EXPECT_GT(memory.at("leakwrap_segment_resident_bytes").get<uint64_t>(), 0u);
        EXPECT_LE(memory.at("leakwrap_segment_resident_bytes"), memory.at("rss_shmem_bytes"))
            << "the segment is shared memory of the process";
        EXPECT_GT(memory.at("rss_anon_bytes"), line.at("totals").at("live_bytes"));
    }
}

TEST(Memory, ALiveReportShowsTheRssInTextJsonAndOpenMetrics) {
    Target program(steady_leak_command(), Environment::profiled());
    program.wait_ready();
    const std::string pid = std::to_string(program.pid());
    const std::string text = report_tool({pid});
    EXPECT_TRUE(contains(text, "\nmemory: RSS ")) << text;
    EXPECT_TRUE(contains(text, "leakwrap's segment ")) << text;
    const json memory = report_json(program.pid()).at("totals").at("memory");
    EXPECT_GT(memory.at("rss_anon_bytes").get<uint64_t>(), 0u) << memory.dump();
    const std::string metrics = report_tool({pid, "--format", "openmetrics"});
    // A sample of the process, whatever its exe and command labels say.
    const auto has_sample = [&](const std::string& name, const std::string& last_label) {
        std::istringstream lines(metrics);
        for (std::string line; std::getline(lines, line);)
            if (line.starts_with(name + "{pid=\"" + pid + "\",") && contains(line, last_label + "} ")) return true;
        return false;
    };
    for (const std::string kind : {"anon", "file", "shmem"})
        EXPECT_TRUE(has_sample("leakwrap_process_resident_bytes", "kind=\"" + kind + "\"")) << metrics;
    EXPECT_TRUE(has_sample("leakwrap_segment_resident_bytes", "\"")) << metrics;
    EXPECT_EQ(program.release_and_wait(), 0);
}

// leakwrap's private tables grow with the stacks and sites a process makes: many_stacks' 32,768
// stacks (a site each) need at least their index nodes (24 bytes) and the sites' chain links (4
// bytes) more than steady_leak's few. The count is part of the anonymous RSS, and every format
// that shows the RSS shows it.
TEST(Memory, LeakwrapsPrivateTablesAreCountedAsTheyGrow) {
    const auto private_tables = [](Target& program) {
        const json memory = report_json(program.pid()).at("totals").at("memory");
        EXPECT_LE(memory.at("leakwrap_private_bytes"), memory.at("rss_anon_bytes")) << memory.dump();
        const uint64_t bytes = memory.at("leakwrap_private_bytes").get<uint64_t>();
        EXPECT_EQ(program.release_and_wait(), 0);
        return bytes;
    };
    Target few(steady_leak_command(), Environment::profiled());
    const std::string few_pid = std::to_string(few.pid());
    few.wait_ready();
    const std::string text = report_tool({few_pid});
    EXPECT_TRUE(contains(text, ", its private tables ")) << text;
    const std::string metrics = report_tool({few_pid, "--format", "openmetrics"});
    EXPECT_TRUE(contains(metrics, "\nleakwrap_private_bytes{pid=\"" + few_pid + "\",")) << metrics;
    const uint64_t few_bytes = private_tables(few);
    EXPECT_GT(few_bytes, 0u);

    Target many({paths::program("many_stacks")},
                Environment::profiled().set("LEAKWRAP_DEPTH", std::to_string(ground_truth::many_stacks::kLevels + 2)));
    many.wait_ready();
    const uint64_t many_bytes = private_tables(many);
    EXPECT_GE(many_bytes, few_bytes + ground_truth::many_stacks::kStacks * (24 + 4))
        << "steady_leak " << few_bytes << " bytes, many_stacks " << many_bytes;
}

TEST(Memory, ALeakThatGrowsRssWithTheHeapIsNoUntrackedGrowth) {
    const json ranking = json::parse(report_tool({"suspects", watched_run().series.string(), "--format", "json"}));
    EXPECT_FALSE(ranking.at("memory").at("untracked").get<bool>()) << ranking.at("memory").dump(2);
    // The RSS growth suspects weighs is the process's own: leakwrap's segment and tables left out.
    const json& first = watched_run().lines.front().at("memory");
    const json& last = watched_run().lines.back().at("memory");
    const auto grown = [&](const char* field) { return last.at(field).get<double>() - first.at(field).get<double>(); };
    const json& memory = ranking.at("memory");
    EXPECT_EQ(memory.at("leakwrap_private_growth_bytes").get<double>(), grown("leakwrap_private_bytes"));
    EXPECT_EQ(memory.at("rss_growth_bytes").get<double>(),
              grown("rss_bytes") - grown("leakwrap_segment_resident_bytes") - grown("leakwrap_private_bytes"))
        << memory.dump(2);
    EXPECT_FALSE(contains(report_tool({"suspects", watched_run().series.string()}), "not a leak at any call site"));
}

TEST(Memory, RssGrowthOutsideMallocIsNamedWithTheClassesThatChurnMost) {
    const WatchedRun& watched = mapping_run();
    const json ranking = json::parse(report_tool({"suspects", watched.series.string(), "--format", "json"}));
    const json& memory = ranking.at("memory");
    ASSERT_TRUE(memory.at("untracked").get<bool>()) << memory.dump(2);
    // Ground truth: every tick touched kMapKib of new pages, and only the leak's 1.2 KiB a tick
    // is tracked.
    const double mapped =
        static_cast<double>(ticks_between(watched.lines.front(), watched.lines.back()) * kMapKib * 1024);
    EXPECT_GE(memory.at("rss_anon_growth_bytes").get<double>(), 0.9 * mapped) << memory.dump(2);
    EXPECT_LT(memory.at("tracked_live_growth_bytes").get<double>(), 0.05 * mapped) << memory.dump(2);
    // churn_temporaries frees eight 2000-byte blocks a tick, more than any other class.
    ASSERT_FALSE(memory.at("churning_classes").empty());
    EXPECT_EQ(memory.at("churning_classes").front().at("limit"), 2048);
    for (const json& suspect : ranking.at("suspects")) {
        if (suspect.at("class") == "leak") {
            EXPECT_TRUE(contains(suspect.at("label"), "leak_steadily"));
        }
    }

    const std::string text = report_tool({"suspects", watched.series.string()});
    EXPECT_TRUE(contains(text,
                         "RSS grew while the tracked live bytes did not: that growth is not a "
                         "leak at any call site"))
        << text;
    EXPECT_TRUE(contains(text, "≤2 KiB (")) << text;
}

// A process that maps kSharedMiB of its own, touches it and forks; when told (a file appears), the
// child writes to every page, which copy on write gives it privately; it exits with its parent.
// READY waits for the child to run: leakwrap's fork handler has then given it its own segment,
// without which `watch --children` passes it over (under load the child may wait a while to run,
// and the first sample would miss its RSS).
constexpr long kSharedMiB = 48;
constexpr const char* kUnsharingTree = R"py(
import mmap, os, sys, time
go, size = sys.argv[1], int(sys.argv[2]) << 20
region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for offset in range(0, size, mmap.PAGESIZE):
    region[offset] = 1
parent = os.getpid()
child_runs, child_ran = os.pipe()
if os.fork() == 0:
    os.write(child_ran, b"1")
    while not os.path.exists(go):
        time.sleep(0.02)
    for offset in range(0, size, mmap.PAGESIZE):
        region[offset] = 2
    print("UNSHARED", flush=True)
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(0)
os.read(child_runs, 1)
print("READY", flush=True)
sys.stdin.readline()
)py";

std::size_t lines_in(const fs::path& path) {
    std::ifstream in(path);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
}

// The growth of a tree is its PSS's: the child's writes add kSharedMiB to what the two processes
// hold, and nothing to the sum of their RSS, which counted the shared pages in each already.
TEST(Memory, AForkedChildUnsharingItsParentsPagesGrowsTheTreesPssNotItsRss) {
    const TemporaryDirectory directory;
    const fs::path go = directory.path() / "go";
    const fs::path series = directory.path() / "tree.jsonl";
    Target tree({paths::python3, "-c", kUnsharingTree, go.string(), std::to_string(kSharedMiB)},
                Environment::profiled());
    tree.wait_ready();
    Target watch({paths::report_tool, "watch", std::to_string(tree.pid()), "--children", "--interval", kInterval,
                  "--out", series.string()},
                 Environment::bare());
    watch.wait_ready("sample 1:");
    std::ofstream(go).put('\n');
    tree.wait_for_line("UNSHARED");
    const std::size_t wanted = lines_in(series) + 2;
    for (int waited = 0; lines_in(series) < wanted && waited < 600; ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(watch.pid(), SIGTERM);
    EXPECT_EQ(watch.release_and_wait(), 0);
    EXPECT_EQ(tree.release_and_wait(), 0);

    const json memory = json::parse(report_tool({"suspects", series.string(), "--format", "json"})).at("memory");
    const double unshared = kSharedMiB * 1024.0 * 1024.0;
    EXPECT_EQ(memory.at("measured_by"), "pss") << memory.dump(2);
    EXPECT_GE(memory.at("pss_growth_bytes").get<double>(), 0.9 * unshared) << memory.dump(2);
    EXPECT_LT(std::abs(memory.at("rss_growth_bytes").get<double>()), 0.2 * unshared) << memory.dump(2);
    EXPECT_TRUE(memory.at("untracked").get<bool>()) << memory.dump(2);

    const fs::path svg = directory.path() / "tree.svg";
    report_tool({"plot", series.string(), "-o", svg.string()});
    EXPECT_NE(read_file(svg).find(">PSS  ("), std::string::npos) << "the tree's PSS line's legend";
}

TEST(Memory, PlotDrawsRssAndTrackedBytesAboveTheSites) {
    const WatchedRun& watched = mapping_run();
    const fs::path svg = watched.directory.path() / "memory.svg";
    report_tool({"plot", watched.series.string(), "-o", svg.string()});
    const std::string chart = read_file(svg);
    const auto rss = chart.find(">RSS  ("), tracked = chart.find(">tracked live bytes  (");
    ASSERT_NE(rss, std::string::npos) << "the RSS line's legend";
    ASSERT_NE(tracked, std::string::npos);
    EXPECT_LT(tracked, chart.find("leak_steadily")) << "the process panel comes first";
    EXPECT_NE(chart.find(">leakwrap&#39;s private tables  ("), std::string::npos)
        << "leakwrap's own memory, its tables beside its segment";
}

}  // namespace
}  // namespace leakwrap::e2e
