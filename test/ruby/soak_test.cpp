// examples/puma soaked the way a server sees traffic: bursts of requests with idle time between
// and after them, and Ruby's GC collecting request garbage whenever it runs (no out-of-band GC
// here, so garbage lags behind the requests). watch records the real process, and suspects must
// class the one real leak, the renderer's options block, as a leak and rank it first, and must
// not take the renderer structs that the GC frees in bursts for one.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "ruby_support.h"
#include "temporary_directory.h"

namespace leakwrap::e2e::ruby {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr long long kBurst = 100;
constexpr int kBursts = 3;
constexpr const char* kInterval = "250ms";
// Between bursts; the idle end of a series is made by waiting for samples instead.
constexpr auto kIdle = std::chrono::milliseconds(1500);
constexpr std::size_t kIdleSamplesAtTheEnd = 3;
constexpr const char* kExtension = "/markdown_renderer.so";

std::set<uint64_t> row_ids(const std::vector<json>& rows) {
    std::set<uint64_t> ids;
    for (const json& row : rows) ids.insert(row.at("id").get<uint64_t>());
    return ids;
}

// Watches puma into `series` while `traffic` runs, then stops the watch as a service manager
// does, with SIGTERM (a shell leaves SIGINT ignored in what it starts in the background, and so
// may CTest's caller).
fs::path watch_during(const Puma& puma, const fs::path& series, const std::function<void(const fs::path&)>& traffic) {
    Target watch({e2e::paths::report_tool, "watch", std::to_string(puma.pid()), "--interval", kInterval, "--out",
                  series.string()},
                 Environment::bare());
    watch.wait_ready("sample 1:");
    traffic(series);
    kill(watch.pid(), SIGTERM);
    EXPECT_EQ(watch.release_and_wait(), 0);
    return series;
}

std::size_t lines_in(const fs::path& path) {
    std::ifstream in(path);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
}

// Waits until the watch has written `more` lines beyond what the series holds now (it flushes
// every line), however long a sample takes on a loaded machine.
void wait_for_samples(const fs::path& series, std::size_t more) {
    const std::size_t wanted = lines_in(series) + more;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines_in(series) < wanted) {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the watch wrote no new samples for 60 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

json suspects_of(const fs::path& series) {
    const Completed ranked = run_report({"suspects", series.string(), "--format", "json", "--top", "0"});
    if (ranked.exit_code != 0) throw std::runtime_error("suspects failed: " + ranked.err);
    return json::parse(ranked.out);
}

// The leak's live bytes in the last two lines of the series: equal when the series ends idle.
std::pair<uint64_t, uint64_t> last_two_values(const fs::path& series, uint64_t id) {
    std::vector<uint64_t> values;
    std::ifstream in(series);
    for (std::string line; std::getline(in, line);) {
        uint64_t value = 0;
        for (const json& site : json::parse(line).at("sites"))
            if (site.at("id") == id) value = site.at("live_bytes");
        values.push_back(value);
    }
    if (values.size() < 2) throw std::runtime_error("fewer than two samples");
    return {values[values.size() - 2], values.back()};
}

void expect_the_leak_first_and_no_renderer_leaking(const json& ranking, const std::set<uint64_t>& leak,
                                                   const std::set<uint64_t>& renderers) {
    const json& suspects = ranking.at("suspects");
    ASSERT_FALSE(suspects.empty());
    const json& first = suspects.front();
    EXPECT_TRUE(leak.contains(first.at("id").get<uint64_t>())) << suspects.dump(2);
    EXPECT_EQ(first.at("class"), "leak") << first.dump(2);
    EXPECT_EQ(first.at("frees"), 0) << "the options block is never freed";
    EXPECT_EQ(first.at("retained_share"), 1.0);
    for (const json& suspect : suspects) {
        if (renderers.contains(suspect.at("id").get<uint64_t>())) {
            EXPECT_NE(suspect.at("class"), "leak") << suspect.dump(2);
        }
    }
}

TEST(RubySoak, BurstsThenIdleAndTrafficCutShortBothPutTheLeakFirst) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    ASSERT_FALSE(paths::puma.empty()) << "puma is not installed (scripts/setup.sh installs it)";
    Puma puma({paths::source("examples/puma/config.ru")});
    // A warm-up, as a soak has (soak_gate.sh -w): the first requests make what a server keeps for
    // good (puma's threads as requests queue, Ruby's heap as it grows), which a series from the
    // start can read as a leak. Without it, once in about fifteen runs under load, a site that
    // freed 3 of its 115 blocks in the series outranked the options block.
    send_requests(puma.url(), kBurst);

    const TemporaryDirectory directory;
    const fs::path bursts = watch_during(puma, directory.path() / "bursts.jsonl", [&](const fs::path& series) {
        for (int burst = 0; burst < kBursts; ++burst) {
            if (burst > 0) std::this_thread::sleep_for(kIdle);
            send_requests(puma.url(), kBurst);
        }
        // One more, for a sample that the last requests may still have been running into.
        wait_for_samples(series, kIdleSamplesAtTheEnd + 1);
    });
    // A second series that the watch stops while requests are still coming, on whatever rise
    // the GC left.
    std::thread client;
    const fs::path cut_short = watch_during(puma, directory.path() / "cut-short.jsonl", [&](const fs::path&) {
        send_requests(puma.url(), kBurst);
        std::this_thread::sleep_for(kIdle);
        client = std::thread([&] { send_requests(puma.url(), kBurst); });
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
    });
    client.join();

    const json report = report_json(puma.pid());
    const std::set<uint64_t> leak = row_ids(rows_allocated_by(report, kExtension, "render_options_new"));
    const std::set<uint64_t> renderers = row_ids(rows_allocated_by(report, kExtension, "renderer_new"));
    ASSERT_FALSE(leak.empty());
    ASSERT_FALSE(renderers.empty());
    const auto [before_last, last] = last_two_values(bursts, *leak.begin());
    EXPECT_EQ(before_last, last) << "the first series ends idle";

    SCOPED_TRACE("bursts then idle");
    const json bursts_ranking = suspects_of(bursts);
    expect_the_leak_first_and_no_renderer_leaking(bursts_ranking, leak, renderers);
    SCOPED_TRACE("cut short");
    expect_the_leak_first_and_no_renderer_leaking(suspects_of(cut_short), leak, renderers);
    EXPECT_EQ(puma.stop(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
