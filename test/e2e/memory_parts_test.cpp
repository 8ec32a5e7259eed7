// RSS explained (reader/rows/memory_parts.h) on real programs: a program whose threads leave
// glibc's arenas full of free memory must have that memory attributed to malloc's heaps as free
// memory, in the heaps of its thread arenas, and the same program under MALLOC_ARENA_MAX=2 much
// less of it; the same program leaking instead must have it attributed to live blocks at the
// leaking site. The parts always add up to RSS. The allocator's own count, which the preload
// reads now and then (glibc's malloc_info, jemalloc's mallctl statistics), says the same free
// memory per arena, and how much of it the allocator would hand back.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

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
    // The allocator's count is read at most once a second by a thread that allocates (the idle
    // threads do now and then): the report is taken once a reading followed the churn.
    const auto ready = std::chrono::steady_clock::now();
    for (;;) {
        run.report = report_json(target.pid());
        const auto since_ready = std::chrono::duration<double>(std::chrono::steady_clock::now() - ready).count();
        const nlohmann::json* allocator =
            run.report.at("totals").contains("allocator") ? &run.report.at("totals").at("allocator") : nullptr;
        if ((allocator != nullptr && allocator->at("age_seconds").get<double>() < since_ready) || since_ready > 30)
            break;
        std::this_thread::sleep_for(200ms);
    }
    const Completed text = run_report({std::to_string(target.pid()), "--top", "1"});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    run.text = text.out;
    EXPECT_EQ(target.release_and_wait(), 0);
    return run;
}

const nlohmann::json& explained(const ArenaRun& run) { return run.report.at("totals").at("memory").at("explained"); }

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

const nlohmann::json& allocator(const ArenaRun& run) { return run.report.at("totals").at("allocator"); }

unsigned long long figure(const nlohmann::json& object, const char* name) {
    return object.at(name).get<unsigned long long>();
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

    // glibc's own count, read after the churn: the main arena and one per thread, each thread's
    // holding what it freed; together the free memory the mappings show, much of it in whole
    // pages (the freed runs between kept blocks span pages).
    const nlohmann::json& glibc = allocator(own_arenas);
    EXPECT_EQ(glibc.at("allocator"), "glibc");
    EXPECT_EQ(glibc.at("arenas_total"), kThreads + 1) << glibc.dump(2);
    EXPECT_GE(glibc.at("taken_since_start_seconds").get<double>(), 1.0) << "read before the churn ended";
    const unsigned long long free_by_mappings = part(own_arenas, "heap_free");
    EXPECT_GE(figure(glibc, "free_bytes"), free_by_mappings * 9 / 10) << glibc.dump(2);
    EXPECT_LE(figure(glibc, "free_bytes"), free_by_mappings * 11 / 10) << glibc.dump(2);
    EXPECT_GT(figure(glibc, "returnable_bytes"), figure(glibc, "free_bytes") / 4) << glibc.dump(2);
    EXPECT_LE(figure(glibc, "returnable_bytes"), figure(glibc, "free_bytes")) << glibc.dump(2);
    int arenas_holding_much = 0;
    for (const auto& arena : glibc.at("arenas"))
        if (arena.at("arena") != 0 && figure(arena, "free_bytes") >= (16u << 20)) ++arenas_holding_much;
    EXPECT_EQ(arenas_holding_much, kThreads) << glibc.dump(2);
    EXPECT_TRUE(has_finding(own_arenas, "malloc_trim(0) would return")) << explained(own_arenas).dump(2);
    EXPECT_NE(own_arenas.text.find("allocator: glibc's own count (malloc_info"), std::string::npos) << own_arenas.text;
    EXPECT_NE(own_arenas.text.find("arenas holding the most free memory: #"), std::string::npos) << own_arenas.text;
    EXPECT_NE(own_arenas.text.find("RSS explained: malloc's heaps"), std::string::npos) << own_arenas.text;
    EXPECT_NE(own_arenas.text.find("finding: malloc keeps"), std::string::npos) << own_arenas.text;

    Environment two_arenas_environment = Environment::profiled();
    two_arenas_environment.set("MALLOC_ARENA_MAX", "2");
    const ArenaRun two_arenas = run_fragmented_arenas({}, two_arenas_environment);
    expect_parts_add_up_to_rss(two_arenas);
    EXPECT_LT(part(two_arenas, "heap_free") * 2, part(own_arenas, "heap_free")) << explained(two_arenas).dump(2);
    EXPECT_LE(explained(two_arenas).at("malloc_heaps").size(), 3u) << explained(two_arenas).dump(2);
    EXPECT_EQ(allocator(two_arenas).at("arenas_total"), 2) << allocator(two_arenas).dump(2);
    EXPECT_LT(figure(allocator(two_arenas), "free_bytes") * 2, figure(glibc, "free_bytes"))
        << allocator(two_arenas).dump(2);
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
    EXPECT_LT(figure(allocator(leak), "free_bytes") * 10, part(leak, "heap_live")) << allocator(leak).dump(2);
    EXPECT_GE(figure(allocator(leak), "in_use_bytes"), static_cast<unsigned long long>(leak.kept_bytes));
}

// Sampling mode: nearly every block is glibc's own, with no header of leakwrap's, so the blocks'
// overhead is glibc's alone (its chunk header and rounding, about 16 bytes a block: half of what
// exact mode counts). Without a leak the heaps hold far more free memory than overhead, so the
// estimate is never cut short by what the heaps hold; the parts still add up to RSS, and the kept
// blocks are estimated near the truth (about 1,500 of them sampled at this interval).
TEST(MemoryParts, InSamplingModeABareBlocksOverheadIsGlibcsAlone) {
    const ArenaRun run = run_fragmented_arenas({}, Environment::profiled().set("LEAKWRAP_SAMPLE", "4096"));
    expect_parts_add_up_to_rss(run);
    EXPECT_EQ(run.report.at("totals_estimated"), true);
    const Counters site = sites_calling(run.report, "churn_small_blocks", 1).counters;
    EXPECT_NEAR(site.live_bytes, run.kept_bytes, run.kept_bytes * 0.15);
    const auto live_blocks = run.report.at("totals").at("live_blocks").get<unsigned long long>();
    EXPECT_GT(part(run, "heap_free"), part(run, "heap_block_overhead") * 10) << explained(run).dump(2);
    EXPECT_LE(part(run, "heap_block_overhead"), live_blocks * 16) << explained(run).dump(2);
    EXPECT_GE(part(run, "heap_block_overhead"), live_blocks * 16 * 9 / 10) << explained(run).dump(2);
}

// A process left alone is read no more, but what it last said still describes its heaps when
// nothing was allocated or freed since: the quiet program allocates a block at a time until one
// of them brings a reading, then nothing; past the age up to which any count is weighed (5 s),
// its count is weighed still, and says that nothing happened since.
TEST(MemoryParts, AQuietProcesssCountIsWeighedWhileNothingIsAllocatedOrFreed) {
    Target target({paths::program("fragmented_arenas"), "quiet"}, Environment::profiled());
    target.wait_ready("READY", 90s);
    const auto nothing_since_reading = [&] {
        const nlohmann::json totals = report_json(target.pid()).at("totals");
        return totals.contains("allocator") && totals.at("allocator").at("since_reading").at("allocs") == 0;
    };
    for (int tick = 0; !nothing_since_reading(); ++tick) {
        ASSERT_LT(tick, 300) << "no block brought a reading";
        std::this_thread::sleep_for(100ms);
        target.send_line("tick");
        target.wait_ready("TICKED");
    }
    std::this_thread::sleep_for(6s);
    const nlohmann::json report = report_json(target.pid());
    const Completed text = run_report({std::to_string(target.pid()), "--top", "1"});
    EXPECT_EQ(target.release_and_wait(), 0);
    const nlohmann::json& glibc = report.at("totals").at("allocator");
    EXPECT_GT(glibc.at("age_seconds").get<double>(), 5.0) << glibc.dump(2);
    EXPECT_EQ(glibc.at("since_reading").at("allocs"), 0) << glibc.dump(2);
    EXPECT_EQ(glibc.at("since_reading").at("frees"), 0) << glibc.dump(2);
    bool weighed = false;
    for (const auto& finding : report.at("totals").at("memory").at("explained").at("findings"))
        weighed = weighed || finding.get<std::string>().find("malloc_trim(0) would return") != std::string::npos;
    EXPECT_TRUE(weighed) << report.at("totals").at("memory").dump(2);
    EXPECT_NE(text.out.find("nothing allocated or freed since"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("not weighed"), std::string::npos) << text.out;
}

// jemalloc below leakwrap: its blocks may start a page whose page before is not mapped, which
// 5a0a758's preload read (and crashed on) when such a block was freed. Its own count makes its
// resident memory the heaps: the churn's free memory is jemalloc's, the leak's is live blocks.
TEST(MemoryParts, WithJemallocBelowItsOwnCountSaysWhatItKeepsFree) {
    if (!std::filesystem::exists(LEAKWRAP_JEMALLOC)) GTEST_SKIP() << "no " << LEAKWRAP_JEMALLOC;
    Environment below = Environment::profiled();
    below.set("LD_PRELOAD", paths::preload_library + " " + LEAKWRAP_JEMALLOC);
    for (const std::vector<std::string>& mode : {std::vector<std::string>{}, std::vector<std::string>{"leak"}}) {
        const ArenaRun run = run_fragmented_arenas(mode, below);
        expect_parts_add_up_to_rss(run);
        const nlohmann::json& jemalloc = allocator(run);
        EXPECT_EQ(jemalloc.at("allocator"), "jemalloc") << jemalloc.dump(2);
        EXPECT_GE(jemalloc.at("arenas_total").get<int>(), 1) << jemalloc.dump(2);
        EXPECT_GE(figure(jemalloc, "in_use_bytes"), static_cast<unsigned long long>(run.kept_bytes));
        EXPECT_TRUE(has_finding(run, "jemalloc's own count")) << explained(run).dump(2);
        EXPECT_EQ(sites_calling(run.report, "churn_small_blocks", 1).counters.live_bytes, run.kept_bytes);
        EXPECT_GE(part(run, "heap_live"), static_cast<unsigned long long>(run.kept_bytes));
        const auto rss = run.report.at("totals").at("memory").at("rss_bytes").get<unsigned long long>();
        if (mode.empty())
            EXPECT_GE(part(run, "heap_free"), rss / 2) << explained(run).dump(2);
        else
            EXPECT_LT(part(run, "heap_free") * 4, part(run, "heap_live")) << explained(run).dump(2);
    }
}

// A watch series over the churn: suspects says the growth is malloc's free memory, not a site's.
TEST(MemoryParts, SuspectsSayWhichPartOfRssGrew) {
    const TemporaryDirectory directory;
    const std::filesystem::path go = directory.path() / "go", series = directory.path() / "series.jsonl";
    Target program({paths::program("fragmented_arenas"), "free", go.string()}, Environment::profiled());
    program.wait_ready("WAITING");
    Target watch(
        {paths::report_tool, "watch", std::to_string(program.pid()), "--interval", "200ms", "--out", series.string()},
        Environment::bare());
    watch.wait_ready("sample 2:");
    std::ofstream(go).put('\n');
    program.wait_ready("READY", 90s);
    // The idle threads' allocations bring a reading of glibc's count after the churn, a second or
    // more later (longer when a reading took long): the series ends once a sample has it, which
    // only the idle threads' few allocations follow.
    const auto read_after_churn = [&] {
        std::ifstream in(series);
        std::string line, last;
        while (std::getline(in, line)) last = line;
        const nlohmann::json sample = nlohmann::json::parse(last, nullptr, false);
        return sample.is_object() && sample.contains("allocator") &&
               sample.at("allocator").at("since_reading").at("allocs").get<long long>() < 1000;
    };
    for (int sample = 0; !read_after_churn(); ++sample) {
        ASSERT_LT(sample, 150) << "no reading of glibc's count after the churn";
        watch.wait_ready("sample", 30s);
    }
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
    // glibc's own count says the same from its readings: free memory grew, in the threads' arenas.
    const nlohmann::json& glibc = memory.at("allocator_growth");
    EXPECT_EQ(glibc.at("allocator"), "glibc") << memory.dump(2);
    EXPECT_GE(glibc.at("free_growth_bytes").get<double>(), 0.8 * parts.at("heap_free").get<double>()) << glibc.dump(2);
    const nlohmann::json& arenas = glibc.at("arenas_free_grew_most");
    EXPECT_EQ(arenas.size(), 3u) << glibc.dump(2);
    for (const auto& arena : arenas) {
        EXPECT_NE(arena.at("arena"), 0) << "the main arena: " << glibc.dump(2);
        EXPECT_GE(arena.at("free_growth_bytes").get<double>(), 16 << 20) << glibc.dump(2);
    }
    // The first reading comes with the churn's first allocations or, a second apart, after the
    // first thread's churn: every other thread's arena grew since.
    EXPECT_GE(arenas.size() + glibc.at("more_arenas_free_grew").get<std::size_t>(), std::size_t{kThreads - 1})
        << glibc.dump(2);

    const Completed text = run_report({"suspects", series.string()});
    EXPECT_NE(text.out.find("By part of RSS: heap_free +"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("the arenas whose free memory grew most: #"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace leakwrap::e2e
