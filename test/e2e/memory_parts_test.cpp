// RSS explained (reader/rows/memory_parts.h) on real programs: a program whose threads leave
// glibc's arenas full of free memory must have that memory attributed to malloc's heaps as free
// memory, in the heaps of its thread arenas, and the same program under MALLOC_ARENA_MAX=2 much
// less of it; the same program leaking instead must have it attributed to live blocks at the
// leaking site. The parts always add up to RSS. With jemalloc below leakwrap, the report says
// whose heaps it cannot tell apart, and still counts every live block.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

using ground_truth::fragmented_arenas::kThreads;

struct ArenaRun {
    nlohmann::json report;
    std::string text;
    long long kept_blocks = 0, kept_bytes = 0;
};

ArenaRun run_fragmented_arenas(const std::vector<std::string>& arguments, Environment environment) {
    std::vector<std::string> command{paths::program("fragmented_arenas")};
    command.insert(command.end(), arguments.begin(), arguments.end());
    Target target(command, environment);
    ArenaRun run;
    for (const std::string& line : target.wait_ready("READY", 90s))
        std::sscanf(line.c_str(), "KEPT %lld %lld", &run.kept_blocks, &run.kept_bytes);
    run.report = report_json(target.pid());
    const Completed text = run_report({std::to_string(target.pid()), "--top", "1"});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    run.text = text.out;
    EXPECT_EQ(target.release_and_wait(), 0);
    return run;
}

const nlohmann::json& explained(const ArenaRun& run) {
    return run.report.at("totals").at("memory").at("explained");
}

unsigned long long part(const ArenaRun& run, const char* name) {
    return explained(run).at("parts").at(name).get<unsigned long long>();
}

void expect_parts_add_up_to_rss(const ArenaRun& run) {
    const nlohmann::json& memory = run.report.at("totals").at("memory");
    unsigned long long sum = 0;
    for (const auto& [name, bytes] : explained(run).at("parts").items()) sum += bytes.get<unsigned long long>();
    const auto rss = memory.at("rss_bytes").get<unsigned long long>();
    EXPECT_EQ(explained(run).at("rss_bytes").get<unsigned long long>(), rss);
    EXPECT_LE(sum, rss + rss / 50) << explained(run).dump(2);
    EXPECT_GE(sum + rss / 50, rss) << explained(run).dump(2);
}

bool has_finding(const ArenaRun& run, std::string_view words) {
    for (const auto& finding : explained(run).at("findings"))
        if (finding.get<std::string>().find(words) != std::string::npos) return true;
    return false;
}

TEST(MemoryParts, FreeMemoryKeptInThreadArenasIsMallocsAndShrinksWithTwoArenas) {
    const ArenaRun own_arenas = run_fragmented_arenas({}, Environment::profiled());
    expect_parts_add_up_to_rss(own_arenas);
    const auto rss = own_arenas.report.at("totals").at("memory").at("rss_bytes").get<unsigned long long>();
    const auto live = own_arenas.report.at("totals").at("live_bytes").get<unsigned long long>();
    EXPECT_GE(part(own_arenas, "heap_free"), (rss - live) * 9 / 10) << explained(own_arenas).dump(2);
    EXPECT_EQ(sites_calling(own_arenas.report, "churn_small_blocks", 1).counters.live_bytes, own_arenas.kept_bytes);

    // Each thread's arena holds what it freed: its heap is among the largest, not the main one.
    int thread_heaps_holding_much = 0;
    for (const auto& heap : explained(own_arenas).at("malloc_heaps"))
        if (!heap.at("main").get<bool>() && heap.at("resident_bytes").get<unsigned long long>() >= (16u << 20))
            ++thread_heaps_holding_much;
    EXPECT_GE(thread_heaps_holding_much, kThreads) << explained(own_arenas).dump(2);
    EXPECT_TRUE(has_finding(own_arenas, "MALLOC_ARENA_MAX=2")) << explained(own_arenas).dump(2);
    EXPECT_NE(own_arenas.text.find("RSS explained: malloc's heaps"), std::string::npos) << own_arenas.text;
    EXPECT_NE(own_arenas.text.find("finding: malloc keeps"), std::string::npos) << own_arenas.text;

    Environment two_arenas_environment = Environment::profiled();
    two_arenas_environment.set("MALLOC_ARENA_MAX", "2");
    const ArenaRun two_arenas = run_fragmented_arenas({}, two_arenas_environment);
    expect_parts_add_up_to_rss(two_arenas);
    EXPECT_LT(part(two_arenas, "heap_free") * 2, part(own_arenas, "heap_free"))
        << explained(two_arenas).dump(2);
    EXPECT_LE(explained(two_arenas).at("malloc_heaps").size(), 3u) << explained(two_arenas).dump(2);
}

TEST(MemoryParts, TheSameMemoryLeakedIsLiveBlocksAtTheLeakingSite) {
    const ArenaRun leak = run_fragmented_arenas({"leak"}, Environment::profiled());
    expect_parts_add_up_to_rss(leak);
    const Counters site = sites_calling(leak.report, "churn_small_blocks", 1).counters;
    EXPECT_EQ(site.live_bytes, leak.kept_bytes);
    EXPECT_EQ(site.live_blocks, leak.kept_blocks);
    EXPECT_GE(part(leak, "heap_live"), static_cast<unsigned long long>(leak.kept_bytes));
    EXPECT_LT(part(leak, "heap_free") * 10, part(leak, "heap_live")) << explained(leak).dump(2);
    EXPECT_TRUE(has_finding(leak, "live blocks hold")) << explained(leak).dump(2);
    EXPECT_FALSE(has_finding(leak, "malloc keeps")) << explained(leak).dump(2);
}

// jemalloc below leakwrap: its blocks may start a page whose page before is not mapped, which
// 5a0a758's preload read (and crashed on) when such a block was freed.
TEST(MemoryParts, WithJemallocBelowTheReportSaysWhoseHeapsItCannotTellApart) {
    if (!std::filesystem::exists(LEAKWRAP_JEMALLOC)) GTEST_SKIP() << "no " << LEAKWRAP_JEMALLOC;
    Environment below = Environment::profiled();
    below.set("LD_PRELOAD", paths::preload_library + " " + LEAKWRAP_JEMALLOC);
    for (const std::vector<std::string>& mode : {std::vector<std::string>{}, std::vector<std::string>{"leak"}}) {
        const ArenaRun run = run_fragmented_arenas(mode, below);
        expect_parts_add_up_to_rss(run);
        EXPECT_TRUE(has_finding(run, "libjemalloc")) << explained(run).dump(2);
        EXPECT_EQ(sites_calling(run.report, "churn_small_blocks", 1).counters.live_bytes, run.kept_bytes);
        EXPECT_GE(part(run, "heap_live"), static_cast<unsigned long long>(run.kept_bytes));
    }
}

// A watch series over the churn: suspects says the growth is malloc's free memory, not a site's.
TEST(MemoryParts, SuspectsSayWhichPartOfRssGrew) {
    const TemporaryDirectory directory;
    const std::filesystem::path go = directory.path() / "go", series = directory.path() / "series.jsonl";
    Target program({paths::program("fragmented_arenas"), "free", go.string()}, Environment::profiled());
    program.wait_ready("WAITING");
    Target watch({paths::report_tool, "watch", std::to_string(program.pid()), "--interval", "200ms", "--out",
                  series.string()},
                 Environment::bare());
    watch.wait_ready("sample 2:");
    std::ofstream(go).put('\n');
    program.wait_ready("READY", 90s);
    watch.wait_ready("sample", 30s);
    watch.wait_ready("sample", 30s);
    kill(watch.pid(), SIGTERM);
    EXPECT_EQ(watch.release_and_wait(), 0);
    EXPECT_EQ(program.release_and_wait(), 0);

    const Completed suspects = run_report({"suspects", series.string(), "--format", "json"});
    ASSERT_EQ(suspects.exit_code, 0) << suspects.err;
    const nlohmann::json memory = nlohmann::json::parse(suspects.out).at("memory");
    EXPECT_TRUE(memory.at("untracked").get<bool>()) << memory.dump(2);
    const nlohmann::json& parts = memory.at("parts_growth_bytes");
    const double rss_growth = memory.at("rss_growth_bytes").get<double>();
    EXPECT_GE(parts.at("heap_free").get<double>(), 0.8 * rss_growth) << memory.dump(2);
    for (const auto& [name, growth] : parts.items())
        if (name != "heap_free") {
            EXPECT_LT(growth.get<double>(), parts.at("heap_free").get<double>()) << name;
        }
    bool arena_finding = false;
    for (const auto& finding : memory.at("findings"))
        arena_finding = arena_finding || finding.get<std::string>().find("MALLOC_ARENA_MAX=2") != std::string::npos;
    EXPECT_TRUE(arena_finding) << memory.dump(2);

    const Completed text = run_report({"suspects", series.string()});
    EXPECT_NE(text.out.find("By part of RSS: heap_free +"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace leakwrap::e2e
