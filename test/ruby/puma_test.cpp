// examples/puma: every request through config.ru leaks the options block of one MarkdownRenderer,
// and leakwrap finds exactly that, in a single puma process and across the workers of a cluster.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "ruby_support.h"
#include "temporary_directory.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kRequests = 200;
constexpr long long kOptionsSize = 512;  // sizeof(struct render_options) in markdown_renderer.c
constexpr const char* kExtension = "/markdown_renderer.so";

std::vector<std::string> config_ru() { return {paths::source("examples/puma/config.ru")}; }

void require_puma_and_extension() {
    ASSERT_FALSE(paths::puma.empty()) << "puma is not installed (scripts/setup.sh installs it)";
    ASSERT_TRUE(std::ifstream(paths::extension_dir + kExtension).good())
        << "markdown_renderer.so was not built: install ruby-dev (scripts/setup.sh) and reconfigure";
}

// What /proc says the command line of a process is now, arguments joined by spaces. puma
// retitles its workers after the fork, padding the title with spaces.
std::string live_command_line(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(text.begin(), text.end(), '\0', ' ');
    text.erase(text.find_last_not_of(' ') + 1);
    return text;
}

// The `leakwrap-report --list` line of a pid, or "" if there is none.
std::string listed_line(const std::string& listing, pid_t pid) {
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with(std::to_string(pid) + " ")) return line;
    return {};
}

TEST(RubyPuma, EveryRequestLeaksOneOptionsBlockAtTheLineThatMakesTheRenderer) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    require_puma_and_extension();
    const std::string config = paths::source("examples/puma/config.ru");
    const int renderer_line = line_containing(config, "MarkdownRenderer.new");

    Puma puma(config_ru());
    send_requests(puma.url(), kRequests);
    const nlohmann::json report = report_json(puma.pid());

    // The forgotten block: one per request, none freed, all made on behalf of config.ru's line.
    const std::vector<nlohmann::json> options = rows_allocated_by(report, kExtension, "render_options_new");
    EXPECT_EQ(sum_of(options), (Counters{kRequests, kRequests * kOptionsSize, kRequests, 0}));
    for (const auto& row : options) EXPECT_TRUE(at_ruby_line(row, config, renderer_line)) << row.dump(2);
    // The renderer struct itself: one per request too, freed whenever the GC collects a renderer.
    const Counters renderers = sum_of(rows_allocated_by(report, kExtension, "renderer_new"));
    EXPECT_EQ(renderers.allocs, kRequests);
    EXPECT_LE(renderers.live_blocks, kRequests);

    EXPECT_EQ(puma.stop(), 0);
    EXPECT_FALSE(segment_exists(puma.pid())) << "a clean exit removes the segment";
}

// puma -w 2 under the preload, the master and both workers booted.
class PumaCluster : public ::testing::Test {
protected:
    void SetUp() override {
        LEAKWRAP_SKIP_WITHOUT_RUBY();
        require_puma_and_extension();
        cluster_.emplace(config_ru(), 2);
        workers = cluster_->worker_pids();
        ASSERT_EQ(workers.size(), 2u);
    }

    Puma& puma() { return *cluster_; }

    std::vector<pid_t> workers;

private:
    std::optional<Puma> cluster_;
};

TEST_F(PumaCluster, ClusterWorkersAreListedWithTheirTitlesAndTogetherHoldOneLeakPerRequest) {
    send_requests(puma().url(), kRequests);

    const Completed listing = run_report({"--list"});
    ASSERT_EQ(listing.exit_code, 0) << listing.err;
    EXPECT_NE(listed_line(listing.out, puma().pid()), "") << listing.out;
    long long leaked = 0;
    for (const pid_t worker : workers) {
        // Listed with the title puma gives it ("puma: cluster worker 0: <master pid> [dir]"),
        // not the command line it inherited from the master at the fork.
        const std::string title = live_command_line(worker);
        EXPECT_TRUE(title.starts_with("puma: cluster worker ")) << title;
        EXPECT_NE(listed_line(listing.out, worker).find(title), std::string::npos)
            << "worker " << worker << " is \"" << title << "\"; --list says:\n"
            << listing.out;
        const nlohmann::json report = report_json(worker);
        EXPECT_EQ(report.at("pid"), worker);
        const Counters options = sum_of(rows_allocated_by(report, kExtension, "render_options_new"));
        EXPECT_EQ(options.frees, 0);
        leaked += options.live_blocks;
    }
    EXPECT_EQ(leaked, kRequests);
    // The master serves nothing, so it made no renderer.
    EXPECT_TRUE(rows_allocated_by(report_json(puma().pid()), kExtension, "render_options_new").empty());

    EXPECT_EQ(puma().stop(), 0);
    for (const pid_t worker : workers) EXPECT_FALSE(segment_exists(worker)) << "worker " << worker;
}

std::set<int64_t> pids_of(const nlohmann::json& processes) {
    std::set<int64_t> pids;
    for (const auto& process : processes) pids.insert(process.get<int64_t>());
    return pids;
}

TEST_F(PumaCluster, ChildrenMergeTheClusterIntoOneReportWithOneLeakPerRequest) {
    send_requests(puma().url(), kRequests);

    const nlohmann::json report = report_json(puma().pid(), {"--children"});
    std::set<int64_t> pids;
    for (const auto& process : report.at("processes")) pids.insert(process.at("pid").get<int64_t>());
    EXPECT_EQ(pids, (std::set<int64_t>{puma().pid(), workers[0], workers[1]}));
    // The workers' leaks, merged: one block per request, and each row's split per process adds
    // up to it, in the workers only.
    const std::vector<nlohmann::json> options = rows_allocated_by(report, kExtension, "render_options_new");
    EXPECT_EQ(sum_of(options), (Counters{kRequests, kRequests * kOptionsSize, kRequests, 0}));
    long long split = 0;
    for (const auto& row : options) {
        for (const auto& share : row.at("processes")) {
            EXPECT_NE(share.at("pid"), puma().pid()) << "the master serves nothing";
            split += share.at("live_blocks").get<long long>();
        }
    }
    EXPECT_EQ(split, kRequests);
    // The tree's memory is the sum of its processes'; the workers were forked from the master and
    // share its pages, which their RSS count in each and their PSS divide.
    const auto& memory = report.at("totals").at("memory");
    uint64_t rss = 0, pss = 0;
    for (const auto& process : report.at("processes")) {
        rss += process.at("memory").at("rss_bytes").get<uint64_t>();
        pss += process.at("memory").at("pss_bytes").get<uint64_t>();
    }
    EXPECT_EQ(memory.at("rss_bytes"), rss);
    EXPECT_EQ(memory.at("pss_bytes"), pss);
    EXPECT_GT(pss, 0u);
    EXPECT_LT(pss, rss) << "three processes sharing libruby and the master's heap";
    const Completed text = run_report({std::to_string(puma().pid()), "--children", "--top", "1"});
    EXPECT_NE(text.out.find("processes: 3 merged"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("; PSS "), std::string::npos) << text.out;

    EXPECT_EQ(puma().stop(), 0);
}

TEST_F(PumaCluster, AWorkerThatPumaRestartsJoinsTheWatchedTreeAsANewPid) {
    const TemporaryDirectory directory;
    const std::filesystem::path series = directory.path() / "tree.jsonl";
    Target watch({e2e::paths::report_tool, "watch", std::to_string(puma().pid()), "--children", "--interval", "300ms",
                  "--out", series.string()},
                 Environment::bare());
    watch.wait_ready("sample 1:");
    // Killed, the worker leaves its segment behind; puma forks a new one in its place.
    kill(workers[0], SIGKILL);
    pid_t replacement = 0;
    for (int attempt = 0; attempt < 300 && replacement == 0; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        for (const pid_t worker : puma().worker_pids())
            if (worker != workers[0] && worker != workers[1]) replacement = worker;
    }
    ASSERT_NE(replacement, 0) << "puma started no new worker";
    std::filesystem::remove(segment_path(workers[0]));
    // The watch finds the tree anew at every sample: wait for a line that has the new worker.
    // The last complete line: watch writes a line in pieces, so the file may end in half of one.
    const auto last_line = [&series] {
        std::ifstream in(series);
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        const std::string complete = text.substr(0, text.rfind('\n') + 1);  // "" without one
        if (complete.empty()) return nlohmann::json();
        const std::size_t start = complete.rfind('\n', complete.size() - 2);
        return nlohmann::json::parse(complete.substr(start == std::string::npos ? 0 : start + 1));
    };
    for (int attempt = 0; attempt < 600; ++attempt) {
        const nlohmann::json line = last_line();
        if (line.contains("pids") && pids_of(line.at("pids")).contains(replacement)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(watch.pid(), SIGTERM);
    EXPECT_EQ(watch.release_and_wait(), 0);

    std::vector<nlohmann::json> lines;
    std::ifstream in(series);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(pids_of(lines.front().at("pids")), (std::set<int64_t>{puma().pid(), workers[0], workers[1]}));
    EXPECT_EQ(pids_of(lines.back().at("pids")), (std::set<int64_t>{puma().pid(), workers[1], replacement}));
    EXPECT_EQ(puma().stop(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
