// The arithmetic of time analysis on made-up series, where the right answer is known exactly:
// durations, trend classes, the retained view, site labels and chart axes.
#include <gtest/gtest.h>

#include <cmath>

#include "plot_scale.h"
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
    for (const char* text : {"", "5", "s", "0s", "-1s", "+1s", "1.5s", "5 s", " 5s", "5sec", "5S",
                             "99999999999999999h"})
        EXPECT_EQ(parse_duration(text), std::nullopt) << text;
}

// One sample per second; each site a function of the sample index.
using SiteCurve = double (*)(std::size_t);

std::vector<Sample> series_of(const std::vector<SiteCurve>& curves, std::size_t samples) {
    std::vector<Sample> series;
    for (std::size_t i = 0; i < samples; ++i) {
        Sample sample{.t = 1000.0 + static_cast<double>(i), .pid = 42};
        for (std::size_t id = 0; id < curves.size(); ++id) {
            const auto bytes = static_cast<uint64_t>(curves[id](i));
            sample.sites.push_back({id, "site " + std::to_string(id), "", {.live_bytes = bytes}});
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

Trend trend_of(const std::vector<Suspect>& suspects, uint64_t id) {
    for (const Suspect& suspect : suspects)
        if (suspect.id == id) return suspect.trend;
    throw std::runtime_error("no such site");
}

TEST(Suspects, ClassifyEachShapeOfGrowth) {
    const auto suspects =
        rank_suspects(series_of({steady, filling_then_full, sawtooth, constant, saturating}, 12));
    EXPECT_EQ(trend_of(suspects, 0), Trend::leak);
    EXPECT_EQ(trend_of(suspects, 1), Trend::plateau);
    EXPECT_EQ(trend_of(suspects, 2), Trend::churn);
    EXPECT_EQ(trend_of(suspects, 3), Trend::flat);
    EXPECT_EQ(trend_of(suspects, 4), Trend::plateau);
    EXPECT_EQ(suspects.front().id, 0u) << "leaks first";
}

TEST(Suspects, MeasureTheSteadyLeaksSlopeExactly) {
    const Suspect leak = rank_suspects(series_of({steady}, 12)).front();
    EXPECT_DOUBLE_EQ(leak.slope_bytes_per_hour, 1200.0 * 3600);
    EXPECT_DOUBLE_EQ(leak.recent_slope_bytes_per_hour, 1200.0 * 3600);
    EXPECT_DOUBLE_EQ(leak.r_squared, 1);
    EXPECT_DOUBLE_EQ(leak.rising_share, 1);
    EXPECT_EQ(leak.first_live_bytes, 0);
    EXPECT_EQ(leak.last_live_bytes, 1200.0 * 11);
}

TEST(Suspects, CountAMissingSiteAsZero) {
    std::vector<Sample> series = series_of({steady}, 5);
    series[0].sites.clear();  // below --min-bytes in the first sample
    EXPECT_EQ(rank_suspects(series).front().trend, Trend::leak);
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
        row(0, 10, 20),  // still growing: retained
        row(0, 10, 10),  // grew, then held: retained at 100%
        row(0, 10, 9),   // gave a little back: retained only below 100%
        row(0, 10, 0),   // gave it all back
        row(10, 10, 30), // did not grow from a to b
    };
    EXPECT_EQ(retained_rows(rows, 100).size(), 2u);
    EXPECT_EQ(retained_rows(rows, 90).size(), 3u);
    EXPECT_EQ(retained_rows(rows, 0).size(), 4u);
    EXPECT_EQ(retained_rows(rows, 100).front().counters[2].live_bytes, 20u) << "most kept first";
}

TEST(Diff, MatchesSitesByStackAcrossProcesses) {
    Sample before{.pid = 1, .sites = {{7, "f (a.c:1)", "key-f", {.live_bytes = 100}}}};
    Sample after{.pid = 2, .sites = {{9, "f (a.c:1)", "key-f", {.live_bytes = 300}}}};
    const SnapshotDiff diff = align_snapshots({before, after});
    EXPECT_EQ(diff.matching, SiteMatching::by_stack);
    ASSERT_EQ(diff.sites.size(), 1u);
    EXPECT_EQ(diff.sites.front().live_bytes_change(0, 1), 200);
}

json frame(const char* function, const char* file, int line, const char* module) {
    return {{"addr", "0x1"}, {"function", function}, {"file", file}, {"line", line},
            {"module", module}};
}

TEST(SiteLabel, NamesTheInnermostFrameOutsideTheRuntimes) {
    const json site = {
        {"frames",
         {frame("operator new(unsigned long)", "new_op.cc", 50, "/usr/lib/libstdc++.so.6"),
          frame("make_session()", "/src/app/sessions.cpp", 12, "/src/app/server")}}};
    EXPECT_EQ(site_label(site), "make_session() (sessions.cpp:12)");
    EXPECT_EQ(site_label({{"ruby", {{"file", "app.rb"}, {"line", 3}}}, {"frames", json::array()}}),
              "ruby app.rb:3");
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
              (std::vector<std::string>{"0", "20 KiB", "40 KiB", "60 KiB", "80 KiB", "100 KiB",
                                        "120 KiB"}));
    EXPECT_EQ(byte_axis(110 * 1024.0).high, 120 * 1024.0);
    EXPECT_EQ(labels_of(byte_axis(3)), (std::vector<std::string>{"0", "1 B", "2 B", "3 B"}));
    EXPECT_EQ(labels_of(time_axis(2.1)),
              (std::vector<std::string>{"0:00.0", "0:00.5", "0:01.0", "0:01.5", "0:02.0",
                                        "0:02.5"}));
    EXPECT_EQ(labels_of(time_axis(3600)),
              (std::vector<std::string>{"0:00", "10:00", "20:00", "30:00", "40:00", "50:00",
                                        "1:00:00"}));
}

}  // namespace
}  // namespace leakwrap
