// The arithmetic of time analysis on made-up series, where the right answer is known exactly:
// durations, trend classes, the retained view, site labels and chart axes.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "plot_scale.h"
#include "sample_file.h"
#include "site_label.h"
#include "snapshot_diff.h"
#include "suspects.h"
#include "watch_duration.h"

namespace leakwrap {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(Duration, ParsesEachUnit) {
    EXPECT_EQ(parse_duration("500ms"), 500ms);
    EXPECT_EQ(parse_duration("5s"), 5s);
    EXPECT_EQ(parse_duration("2m"), 2min);
    EXPECT_EQ(parse_duration("1h"), 1h);
}

TEST(Duration, RejectsWhatIsNotAWholePositiveNumberWithAUnit) {
    for (const char* text :
         {"", "5", "s", "0s", "-1s", "+1s", "1.5s", "5 s", " 5s", "5sec", "5S", "99999999999999999h"})
        EXPECT_EQ(parse_duration(text), std::nullopt) << text;
}

TEST(ByteSize, ParsesWholeNumbersOfBinaryUnitsAndNothingElse) {
    EXPECT_EQ(parse_byte_size("0B"), 0u);
    EXPECT_EQ(parse_byte_size("512KiB"), 512u * 1024);
    EXPECT_EQ(parse_byte_size("1MiB"), 1024u * 1024);
    EXPECT_EQ(parse_byte_size("2GiB"), 2ull << 30);
    for (const char* text : {"", "1", "1MB", "1mib", "-1KiB", "1.5MiB", " 1MiB", "99999999999GiB"})
        EXPECT_EQ(parse_byte_size(text), std::nullopt) << text;
}

// One sample per second, the process making 1000 allocations between two samples (the work
// clock); each site a function of the sample index.
using SiteCurve = double (*)(std::size_t);
constexpr uint64_t kAllocsPerSample = 1000;

std::vector<Sample> series_of(
    const std::vector<SiteCurve>& curves, std::size_t samples,
    uint64_t (*work)(std::size_t) = [](std::size_t i) { return kAllocsPerSample * i; }) {
    std::vector<Sample> series;
    for (std::size_t i = 0; i < samples; ++i) {
        Sample sample{.t = 1000.0 + static_cast<double>(i), .pid = 42, .totals = {.allocs = 5000 + work(i)}};
        for (std::size_t id = 0; id < curves.size(); ++id) {
            const auto bytes = static_cast<uint64_t>(curves[id](i));
            // 100-byte blocks: every rise allocated, every fall freed, since the first sample.
            SampleCounters counters{.live_bytes = bytes};
            for (std::size_t step = 1; step <= i; ++step) {
                const double change = curves[id](step) - curves[id](step - 1);
                (change > 0 ? counters.allocs : counters.frees) += static_cast<uint64_t>(std::fabs(change) / 100);
            }
            sample.sites.push_back({id, "site " + std::to_string(id), "", counters});
        }
        series.push_back(std::move(sample));
    }
    return series;
}

double steady(std::size_t i) { return 1200.0 * static_cast<double>(i); }
double filling_then_full(std::size_t i) { return 12000.0 * static_cast<double>(std::min<std::size_t>(i, 4)); }
double sawtooth(std::size_t i) { return i % 2 == 0 ? 50000 : 20000; }
double constant(std::size_t) { return 8192; }
// Grows fast at first, then ever slower: a good straight-line fit, but nearly flat at the end.
double saturating(std::size_t i) { return 100000 * (1 - std::exp(-0.6 * static_cast<double>(i))); }

Trend trend_of(const SuspectRanking& ranking, uint64_t id) {
    for (const Suspect& suspect : ranking.suspects)
        if (suspect.id == id) return suspect.trend;
    throw std::runtime_error("no such site");
}

TEST(Suspects, ClassifyEachShapeOfGrowth) {
    const SuspectRanking ranking =
        rank_suspects(series_of({steady, filling_then_full, sawtooth, constant, saturating}, 12));
    EXPECT_EQ(trend_of(ranking, 0), Trend::leak);
    EXPECT_EQ(trend_of(ranking, 1), Trend::plateau);
    EXPECT_EQ(trend_of(ranking, 2), Trend::churn);
    EXPECT_EQ(trend_of(ranking, 3), Trend::flat);
    EXPECT_EQ(trend_of(ranking, 4), Trend::plateau);
    EXPECT_EQ(ranking.suspects.front().id, 0u) << "leaks first";
}

TEST(Suspects, MeasureTheSteadyLeaksGrowthPerAllocationAndPerHourExactly) {
    const SuspectRanking ranking = rank_suspects(series_of({steady}, 12));
    EXPECT_EQ(ranking.process_allocs, 11 * kAllocsPerSample);
    const Suspect& leak = ranking.suspects.front();
    EXPECT_DOUBLE_EQ(leak.growth_per_million_allocs, 1200.0 * 1000);
    EXPECT_DOUBLE_EQ(leak.recent_growth_per_million_allocs, 1200.0 * 1000);
    EXPECT_DOUBLE_EQ(leak.growth_per_hour, 1200.0 * 3600);
    EXPECT_DOUBLE_EQ(leak.r_squared, 1);
    EXPECT_EQ(leak.first_live_bytes, 0);
    EXPECT_EQ(leak.last_live_bytes, 1200.0 * 11);
}

// Work in three bursts of three samples with idle samples between and after them, as a server
// sees traffic: the clock stands still while the process idles.
uint64_t bursts_then_idle(std::size_t i) {
    constexpr std::size_t kBurst = 3, kIdle = 4;
    const std::size_t burst = std::min<std::size_t>(i / (kBurst + kIdle), 2);
    const std::size_t into = i - burst * (kBurst + kIdle);
    return kAllocsPerSample * (burst * kBurst + std::min(into, kBurst));
}
double leaking_with_the_work(std::size_t i) { return 0.5 * static_cast<double>(bursts_then_idle(i)); }

TEST(Suspects, AnIdleEndIsNoPlateauForALeakThatGrowsWithTheWork) {
    constexpr std::size_t kSamples = 24;  // the last seven samples idle
    const SuspectRanking ranking = rank_suspects(series_of({leaking_with_the_work}, kSamples, bursts_then_idle));
    EXPECT_EQ(ranking.suspects.front().trend, Trend::leak);
    EXPECT_DOUBLE_EQ(ranking.suspects.front().growth_per_million_allocs, 0.5e6);
}

TEST(Suspects, ASiteThatFallsBackIsChurnEvenWhenTheSeriesEndsOnARise) {
    // Grows with each burst; a collection in the idle time gives most of it back.
    const auto collected = [](std::size_t i) {
        const double since_collection = static_cast<double>(bursts_then_idle(i) % (3 * kAllocsPerSample));
        return i % 7 >= 3 ? 1000.0 : 1000.0 + 40 * since_collection;
    };
    std::vector<Sample> series = series_of({}, 17, bursts_then_idle);  // ends in the third burst
    for (std::size_t i = 0; i < series.size(); ++i)
        series[i].sites.push_back({0, "collected", "", {.live_bytes = static_cast<uint64_t>(collected(i))}});
    EXPECT_GT(series.back().sites.front().counters.live_bytes, series[15].sites.front().counters.live_bytes);
    EXPECT_EQ(rank_suspects(series).suspects.front().trend, Trend::churn);
}

TEST(Suspects, ASiteThatFreesPartOfWhatItAllocatesGrowsButIsNoLeak) {
    std::vector<Sample> series = series_of({steady}, 6);
    for (std::size_t i = 0; i < series.size(); ++i)
        series[i].sites.front().counters = {.live_bytes = 1200 * i, .allocs = 24 * i, .frees = 12 * i};
    EXPECT_EQ(rank_suspects(series).suspects.front().trend, Trend::growing);
}

TEST(Suspects, ASiteThatFreesMoreThanItAllocatesInAStepGivesBackInBursts) {
    std::vector<Sample> series = series_of({steady}, 6);
    // A collection freed 13 small blocks in a step that allocated 12 larger ones: the live bytes
    // still rose, the frees tell.
    for (std::size_t i = 3; i < series.size(); ++i) series[i].sites.front().counters.frees = 13;
    const auto ranked = rank_suspects(series);  // a reference into a temporary would dangle
    const Suspect& suspect = ranked.suspects.front();
    EXPECT_EQ(suspect.give_back, GiveBack::in_bursts);
    EXPECT_EQ(suspect.trend, Trend::churn);
}

TEST(Suspects, RetainedShareIsWhatTheSiteAllocatedAndDidNotFree) {
    std::vector<Sample> series = series_of({steady}, 4);
    for (std::size_t i = 0; i < series.size(); ++i)
        series[i].sites.front().counters = {.live_bytes = 1200 * i, .allocs = 10 + 4 * i, .frees = 10 + i};
    const auto ranked = rank_suspects(series);  // a reference into a temporary would dangle
    const Suspect& suspect = ranked.suspects.front();
    EXPECT_EQ(suspect.retention.allocs, 12u);
    EXPECT_EQ(suspect.retention.frees, 3u);
    EXPECT_DOUBLE_EQ(*suspect.retention.retained_share, 0.75);
}

TEST(Suspects, NoWorkMeansNoLeak) {
    const SuspectRanking ranking = rank_suspects(series_of({steady}, 5, [](std::size_t) { return uint64_t{0}; }));
    EXPECT_EQ(ranking.process_allocs, 0u);
    EXPECT_EQ(ranking.suspects.front().trend, Trend::churn);
}

TEST(Suspects, CountAMissingSiteAsZero) {
    std::vector<Sample> series = series_of({steady}, 5);
    series[0].sites.clear();  // below --min-bytes in the first sample
    EXPECT_EQ(rank_suspects(series).suspects.front().trend, Trend::leak);
}

TEST(Suspects, NeedThreeSamples) {
    EXPECT_THROW(rank_suspects(series_of({steady}, 2)), std::runtime_error);
    EXPECT_NO_THROW(rank_suspects(series_of({steady}, 3)));
}

DiffRow row(uint64_t a, uint64_t b, uint64_t c) {
    return {"row", 0, {{.live_bytes = a}, {.live_bytes = b}, {.live_bytes = c}}};
}

TEST(Diff, RetainedViewKeepsWhatGrewAndWasNotGivenBack) {
    const std::vector<DiffRow> rows = {
        row(0, 10, 20),   // still growing: retained
        row(0, 10, 10),   // grew, then held: retained at 100%
        row(0, 10, 9),    // gave a little back: retained only below 100%
        row(0, 10, 0),    // gave it all back
        row(10, 10, 30),  // did not grow from a to b
    };
    EXPECT_EQ(retained_rows(rows, 100).size(), 2u);
    EXPECT_EQ(retained_rows(rows, 90).size(), 3u);
    EXPECT_EQ(retained_rows(rows, 0).size(), 4u);
    EXPECT_EQ(retained_rows(rows, 100).front()->counters[2].live_bytes, 20u) << "most kept first";
}

TEST(Diff, MatchesSitesByStackAcrossProcesses) {
    Sample before{.pid = 1, .sites = {{7, "f (a.c:1)", "key-f", {.live_bytes = 100}}}};
    Sample after{.pid = 2, .sites = {{9, "f (a.c:1)", "key-f", {.live_bytes = 300}}}};
    const SnapshotDiff diff = align_snapshots({before, after});
    EXPECT_EQ(diff.matching, SiteMatching::by_stack);
    ASSERT_EQ(diff.sites.size(), 1u);
    EXPECT_EQ(diff.sites.front().live_bytes_change(0, 1), 200);
}

// The scanner of series-line sites reads what nlohmann reads, escapes and all.
TEST(SampleFile, ReadsSeriesSitesAsNlohmannDoes) {
    const std::string text = R"({"id":7,"live_bytes":100,"live_blocks":2,"allocs":3,"frees":1,)"
                             R"("label":"ruby a\"b\\c\u00e9\n.rb:3","stack":"k\u2603;\ud83d\ude00@x.c:1"})";
    bool scanned_stack = false, parsed_stack = false;
    const SampleSite scanned = sample_site_from_text(text, scanned_stack);
    const SampleSite parsed = sample_site_from_json(json::parse(text), parsed_stack);
    EXPECT_EQ(scanned.label, parsed.label);
    EXPECT_EQ(scanned.stack_key, parsed.stack_key);
    EXPECT_EQ(scanned.label.find('"'), 6u);
    EXPECT_EQ(scanned.id, 7u);
    EXPECT_EQ(scanned.counters.live_bytes, 100u);
    EXPECT_EQ(scanned.counters.frees, 1u);
    EXPECT_TRUE(scanned_stack);
    bool without = true;
    EXPECT_EQ(sample_site_from_text(R"j({"id":1,"label":"f (a.c:1)"})j", without).stack_key, "f (a.c:1)");
    EXPECT_FALSE(without) << "an older series line names no stacks";
}

// The sites of a snapshot's text, in order; its head in `head`.
std::vector<SampleSite> sites_of_snapshot(const std::string& text, json& head) {
    std::istringstream in(text);
    std::vector<SampleSite> sites;
    visit_sample_stream(
        in, "snapshot", [&](const json& object) { head = object; },
        [&](SampleSite&& site, bool) { sites.push_back(std::move(site)); });
    return sites;
}

TEST(SampleFile, ReadsAReportAndALineSiteBySite) {
    json head;
    const auto line =
        sites_of_snapshot(R"j({"t":1.5,"pid":4,"totals":{"live_bytes":10},"bins":[],"sites":[{"id":1,"live_bytes":10,)j"
                          R"j("label":"f (a.c:1)","stack":"f@a.c:1"}],"labels":{"1":"f (a.c:1)"}})j",
                          head);
    ASSERT_EQ(line.size(), 1u);
    EXPECT_EQ(line[0].stack_key, "f@a.c:1");
    EXPECT_EQ(head.at("pid"), 4);
    EXPECT_FALSE(head.contains("labels"));
    EXPECT_TRUE(head.at("sites").empty());

    const auto report = sites_of_snapshot(R"({"pid": 5, "totals": {"live_bytes": 3},
        "sites": [{"id": 2, "live_bytes": 3, "ruby": null, "ruby_frames": [],
                   "frames": [{"addr": "0x1", "function": "g", "file": "b.c", "line": 2, "module": "/bin/x"}]}]})",
                                          head);
    ASSERT_EQ(report.size(), 1u);
    EXPECT_EQ(report[0].label, "g (b.c:2)");
    EXPECT_EQ(head.at("pid"), 5);

    EXPECT_THROW(sites_of_snapshot(R"({"pid": 5, "totals": {}, "sites": [{"id": 1,)", head), std::runtime_error);
}

json frame(const char* function, const char* file, int line, const char* module) {
    return {{"addr", "0x1"}, {"function", function}, {"file", file}, {"line", line}, {"module", module}};
}

TEST(SiteLabel, NamesTheInnermostFrameOutsideTheRuntimes) {
    const json site = {{"frames",
                        {frame("operator new(unsigned long)", "new_op.cc", 50, "/usr/lib/libstdc++.so.6"),
                         frame("make_session()", "/src/app/sessions.cpp", 12, "/src/app/server")}}};
    EXPECT_EQ(site_label(site), "make_session() (sessions.cpp:12)");
    EXPECT_EQ(site_label({{"ruby", {{"file", "app.rb"}, {"line", 3}}}, {"frames", json::array()}}), "ruby app.rb:3");
    EXPECT_EQ(site_label({{"overflow", true}}), "[overflow]");
}

TEST(SiteLabel, StackKeyIgnoresAddresses) {
    json first = {{"frames", {frame("f", "a.c", 1, "/bin/x")}}};
    json second = first;
    second["frames"][0]["addr"] = "0x7f00";
    EXPECT_EQ(site_stack_key(first), site_stack_key(second));
}

std::vector<std::string> labels_of(const Axis& axis) {
    std::vector<std::string> labels;
    for (const AxisTick& tick : axis.ticks) labels.push_back(tick.label);
    return labels;
}

TEST(PlotScale, LabelsBytesInBinaryUnitsAndTimeAsAClock) {
    EXPECT_EQ(labels_of(byte_axis(110 * 1024.0)),
              (std::vector<std::string>{"0", "20 KiB", "40 KiB", "60 KiB", "80 KiB", "100 KiB", "120 KiB"}));
    EXPECT_EQ(byte_axis(110 * 1024.0).high, 120 * 1024.0);
    EXPECT_EQ(labels_of(byte_axis(3)), (std::vector<std::string>{"0", "1 B", "2 B", "3 B"}));
    EXPECT_EQ(labels_of(time_axis(2.1)),
              (std::vector<std::string>{"0:00.0", "0:00.5", "0:01.0", "0:01.5", "0:02.0", "0:02.5"}));
    EXPECT_EQ(labels_of(time_axis(3600)),
              (std::vector<std::string>{"0:00", "10:00", "20:00", "30:00", "40:00", "50:00", "1:00:00"}));
}

}  // namespace
}  // namespace leakwrap
