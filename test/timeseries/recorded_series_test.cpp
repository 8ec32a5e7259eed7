// suspects on series recorded from real runs (series/README.md says how each was made): the real
// leakwrap-report must class the known leak as a leak and rank it first, and must not take
// garbage that Ruby's GC collects in bursts, a filled cache or an idle end for one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <stdlib.h>

#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

using nlohmann::json;

std::string recorded(const std::string& name) {
    return std::string(LEAKWRAP_SOURCE_DIR) + "/test/timeseries/series/" + name;
}

std::vector<json> lines_of(const std::string& path) {
    std::vector<json> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
}

json suspects_of(const std::string& path) {
    const Completed ranked = run_report({"suspects", path, "--format", "json", "--top", "0"});
    if (ranked.exit_code != 0) throw std::runtime_error("suspects failed: " + ranked.err);
    return json::parse(ranked.out).at("suspects");
}

bool labelled(const json& row, std::string_view part) {
    return row.at("label").get<std::string>().find(part) != std::string::npos;
}

// The site's counters in a series line, or null.
json site_in(const json& line, uint64_t id) {
    for (const json& site : line.at("sites"))
        if (site.at("id") == id) return site;
    return nullptr;
}

void expect_puma_leak_first(const json& suspects) {
    ASSERT_FALSE(suspects.empty());
    const json& first = suspects.front();
    EXPECT_TRUE(labelled(first, "examples/puma/config.ru:12")) << first.dump(2);
    EXPECT_EQ(first.at("class"), "leak") << first.dump(2);
    EXPECT_EQ(first.at("frees"), 0);
    for (const json& suspect : suspects) {
        if (suspect.at("id") == first.at("id")) continue;
        EXPECT_NE(suspect.at("class"), "leak") << "only one site leaks: " << suspect.dump(2);
        if (labelled(suspect, "socket.rb:452")) {
            EXPECT_EQ(suspect.at("class"), "churn") << "puma's read buffers are GC garbage: " << suspect.dump(2);
        }
    }
}

TEST(RecordedSeries, PumaBurstsThenIdle) {
    const std::string path = recorded("puma-bursts-then-idle.jsonl");
    const json suspects = suspects_of(path);
    expect_puma_leak_first(suspects);
    // Ground truth: 900 requests, one leaked block each; and the series does end idle.
    const std::vector<json> lines = lines_of(path);
    const uint64_t leak = suspects.front().at("id");
    EXPECT_EQ(site_in(lines.back(), leak).at("allocs"), 900);
    for (std::size_t i = lines.size() - 10; i < lines.size(); ++i)
        EXPECT_EQ(site_in(lines[i], leak).at("live_bytes"), site_in(lines.back(), leak).at("live_bytes"));
}

TEST(RecordedSeries, PumaTrafficCutShortWhileTheGcLags) {
    expect_puma_leak_first(suspects_of(recorded("puma-traffic-cut-short.jsonl")));
}

TEST(RecordedSeries, SteadyLeakWithAFillingCache) {
    const json suspects = suspects_of(recorded("steady-leak.jsonl"));
    ASSERT_EQ(suspects.size(), 3u) << suspects.dump(2);
    EXPECT_TRUE(labelled(suspects[0], "leak_steadily")) << suspects.dump(2);
    EXPECT_EQ(suspects[0].at("class"), "leak");
    EXPECT_EQ(suspects[0].at("retained_share"), 1.0);
    EXPECT_TRUE(labelled(suspects[1], "fill_bounded_cache")) << suspects.dump(2);
    EXPECT_EQ(suspects[1].at("class"), "plateau");
    EXPECT_EQ(suspects[2].at("class"), "flat");
}

}  // namespace
}  // namespace leakwrap::e2e

namespace leakwrap::e2e {
namespace {

std::vector<std::string> labels_of(const json& rows) {
    std::vector<std::string> labels;
    for (const json& row : rows) labels.push_back(row.at("label"));
    return labels;
}

// --focus and --ignore in time analysis match a site's label and stack: native functions in a
// series of a C++ program, Ruby file:line in a puma one. The sites kept keep their ranking.
TEST(RecordedSeries, FocusAndIgnoreKeepTheSitesTheyMatch) {
    const std::string steady = recorded("steady-leak.jsonl");
    const Completed focused =
        run_report({"suspects", steady, "--format", "json", "--top", "0", "--focus", "^leak_steadily"});
    ASSERT_EQ(focused.exit_code, 0) << focused.err;
    const json leak = json::parse(focused.out).at("suspects");
    ASSERT_EQ(leak.size(), 1u) << leak.dump(2);
    EXPECT_EQ(leak[0].at("label"), "leak_steadily() (steady_leak.cpp:29)");
    EXPECT_EQ(leak[0].at("class"), "leak");

    const Completed ignored =
        run_report({"suspects", steady, "--format", "json", "--top", "0", "--ignore", "^main$|^main "});
    ASSERT_EQ(ignored.exit_code, 0) << ignored.err;
    EXPECT_EQ(labels_of(json::parse(ignored.out).at("suspects")),
              (std::vector<std::string>{"leak_steadily() (steady_leak.cpp:29)",
                                        "fill_bounded_cache() (steady_leak.cpp:38)"}));

    const Completed ruby = run_report({"suspects", recorded("puma-bursts-then-idle.jsonl"), "--format", "json", "--top",
                                       "0", "--focus", R"(examples/puma/config\.ru:12$)"});
    ASSERT_EQ(ruby.exit_code, 0) << ruby.err;
    const json puma = json::parse(ruby.out).at("suspects");
    expect_puma_leak_first(puma);
    for (const json& suspect : puma) EXPECT_TRUE(labelled(suspect, "examples/puma/config.ru:12")) << suspect.dump(2);
}

TEST(RecordedSeries, DiffFocusesItsSitesAndKeepsTheClassesWhole) {
    const std::vector<json> lines = lines_of(recorded("steady-leak.jsonl"));
    const TemporaryDirectory directory;
    const std::string a = directory.path() / "a.json", b = directory.path() / "b.json";
    std::ofstream(a) << lines.front().dump();
    std::ofstream(b) << lines.back().dump();
    const Completed all = run_report({"diff", a, b, "--format", "json", "--top", "0"});
    const Completed focused = run_report({"diff", a, b, "--format", "json", "--top", "0", "--focus", "fill_bounded"});
    ASSERT_EQ(focused.exit_code, 0) << focused.err;
    const json diff = json::parse(focused.out);
    EXPECT_EQ(labels_of(diff.at("sites")), std::vector<std::string>{"fill_bounded_cache() (steady_leak.cpp:38)"});
    EXPECT_EQ(diff.at("bins"), json::parse(all.out).at("bins"));
    EXPECT_EQ(diff.at("totals"), json::parse(all.out).at("totals"));
}

}  // namespace
}  // namespace leakwrap::e2e
