// examples/puma: every request through config.ru leaks the options block of one MarkdownRenderer,
// and leakwrap finds exactly that, in a single puma process and across the workers of a cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kRequests = 200;
constexpr long long kOptionsSize = 512;  // sizeof(struct render_options) in markdown_renderer.c
constexpr const char* kExtension = "/markdown_renderer.so";

std::vector<std::string> config_ru() {
    return {paths::source("examples/puma/config.ru")};
}

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

TEST(RubyPuma, ClusterWorkersAreListedWithTheirTitlesAndTogetherHoldOneLeakPerRequest) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    require_puma_and_extension();

    Puma puma(config_ru(), 2);
    const std::vector<pid_t> workers = puma.worker_pids();
    ASSERT_EQ(workers.size(), 2u);
    send_requests(puma.url(), kRequests);

    const Completed listing = run_report({"--list"});
    ASSERT_EQ(listing.exit_code, 0) << listing.err;
    EXPECT_NE(listed_line(listing.out, puma.pid()), "") << listing.out;
    long long leaked = 0;
    for (const pid_t worker : workers) {
        // Listed with the title puma gives it ("puma: cluster worker 0: <master pid> [dir]"),
        // not the command line it inherited from the master at the fork.
        const std::string title = live_command_line(worker);
        EXPECT_TRUE(title.starts_with("puma: cluster worker ")) << title;
        EXPECT_NE(listed_line(listing.out, worker).find(title), std::string::npos)
            << "worker " << worker << " is \"" << title << "\"; --list says:\n" << listing.out;
        const nlohmann::json report = report_json(worker);
        EXPECT_EQ(report.at("pid"), worker);
        const Counters options = sum_of(rows_allocated_by(report, kExtension, "render_options_new"));
        EXPECT_EQ(options.frees, 0);
        leaked += options.live_blocks;
    }
    EXPECT_EQ(leaked, kRequests);
    // The master serves nothing, so it made no renderer.
    EXPECT_TRUE(rows_allocated_by(report_json(puma.pid()), kExtension, "render_options_new").empty());

    EXPECT_EQ(puma.stop(), 0);
    for (const pid_t worker : workers) EXPECT_FALSE(segment_exists(worker)) << "worker " << worker;
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
