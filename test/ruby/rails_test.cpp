// examples/rails: a Rails 6.1 app in puma whose controller leaks the 384-byte state of the C
// extension TableOfContents once per request, and leakwrap finds exactly that among the more
// than 100000 call sites that booting Rails makes: by the growth between two snapshots, and in
// one snapshot by the memory born after the boot (--born-after).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "ruby_support.h"
#include "temporary_directory.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kRequests = 200;
// The diff between two snapshots ranks rows by live bytes gained, and garbage Ruby has not yet
// collected counts there too (Nokogiri's and Redcarpet's buffers, freed only at the next GC):
// the leak grows with every request, that garbage does not, so enough requests put it first
// (600 did not always, under load).
constexpr long long kMoreRequests = 2000;
constexpr long long kStateSize = 384;  // sizeof(struct toc_state) in table_of_contents.c
constexpr const char* kExtension = "/table_of_contents.so";

// Seconds since the process started, as /proc counts it (clock ticks since boot).
double age_of(pid_t pid) {
    std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // field 3 on
    std::string field;
    for (int number = 3; number < 22; ++number) fields >> field;
    unsigned long long start_ticks = 0;
    fields >> start_ticks;
    double uptime = 0;
    std::ifstream("/proc/uptime") >> uptime;
    return uptime - static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void require_rails_and_extension() {
    ASSERT_FALSE(paths::puma.empty()) << "puma is not installed (scripts/setup.sh installs it)";
    ASSERT_TRUE(std::ifstream(paths::extension_dir + kExtension).good())
        << "table_of_contents.so was not built: install ruby-dev (scripts/setup.sh) and reconfigure";
    const char* gems = "require 'action_controller/railtie'; require 'redcarpet'; require 'nokogiri'";
    const Completed loaded = run({paths::ruby, "-e", gems}, Environment::bare());
    ASSERT_EQ(loaded.exit_code, 0) << "Rails, redcarpet or nokogiri is missing (scripts/setup.sh installs them)\n"
                                   << loaded.err;
}

TEST(RubyRails, EveryRequestLeaksOneTableOfContentsStateAtTheControllerLine) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    ASSERT_NO_FATAL_FAILURE(require_rails_and_extension());
    const std::string controller = paths::source("examples/rails/app/controllers/notes_controller.rb");
    const int leak_line = line_containing(controller, "TableOfContents.render(");

    Puma puma({"-C", paths::source("examples/rails/config/puma.rb"), paths::source("examples/rails/config.ru")});
    // A point past the boot, even rounded down to the start of its cell of the birth grid (at
    // most 1/8 of the time before it), and the requests only after it.
    const long long born_after = std::llround(std::ceil(age_of(puma.pid()) * 1.25)) + 1;
    while (age_of(puma.pid()) < static_cast<double>(born_after) + 0.1)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    send_requests(puma.url(), kRequests);
    const nlohmann::json report = report_json(puma.pid());

    // One state per request, none freed, each made on behalf of the controller's line.
    const std::vector<nlohmann::json> states = rows_allocated_by(report, kExtension, "toc_state_new");
    EXPECT_EQ(sum_of(states), (Counters{kRequests, kRequests * kStateSize, kRequests, 0}));
    for (const auto& row : states) {
        EXPECT_TRUE(at_ruby_line(row, controller, leak_line)) << row.dump(2);
        // The Ruby backtrace goes on from the controller's line into Rails' dispatch ...
        const auto& ruby_frames = row.at("ruby_frames");
        ASSERT_GE(ruby_frames.size(), 2u) << row.dump(2);
        EXPECT_TRUE(std::any_of(ruby_frames.begin() + 1, ruby_frames.end(), [](const auto& frame) {
            return frame.at("file").template get<std::string>().find("action") != std::string::npos;
        })) << row.dump(2);
        // ... and the native stack stops where the VM called the extension: its two functions
        // and at most the VM frame that called them, not the interpreter's dispatch.
        const auto& frames = row.at("frames");
        ASSERT_GE(frames.size(), 2u) << row.dump(2);
        EXPECT_LE(frames.size(), 3u) << row.dump(2);
        EXPECT_EQ(frames[1].at("function"), "toc_render") << row.dump(2);
        if (frames.size() == 3) {
            EXPECT_NE(frames[2].at("module").get<std::string>().find("libruby"), std::string::npos) << row.dump(2);
        }
    }
    // Booting Rails makes about 130 000 sites: far below the default capacity (16M), with room
    // for a much larger app.
    const auto sites = report.at("totals").at("sites").get<long long>();
    std::cout << "Rails app: " << sites << " sites after boot and " << kRequests << " requests\n";
    EXPECT_LT(sites, 1'000'000);
    EXPECT_EQ(report.at("totals").at("lost_sites").get<long long>(), 0);

    // Boot memory outweighs the leak for thousands of requests, but the growth between two
    // snapshots names it first: what a soak test looks at.
    const std::string pid = std::to_string(puma.pid());
    const TemporaryDirectory snapshots;
    const std::string before = (snapshots.path() / "before.json").string();
    const std::string after = (snapshots.path() / "after.json").string();
    ASSERT_EQ(run_report({pid, "--by", "ruby", "--format", "json", "--top", "0", "-o", before}).exit_code, 0);
    send_requests(puma.url(), kMoreRequests);
    ASSERT_EQ(run_report({pid, "--by", "ruby", "--format", "json", "--top", "0", "-o", after}).exit_code, 0);
    const Completed diff = run_report({"diff", before, after, "--top", "1"});
    EXPECT_EQ(diff.exit_code, 0) << diff.err;
    const std::string first_row = controller + ":" + std::to_string(leak_line);
    EXPECT_NE(diff.out.find(first_row), std::string::npos) << diff.out;

    // One snapshot, without a series: the memory born after the boot has the leak first, all
    // of its states and nothing of the boot.
    const std::string born = std::to_string(born_after) + "s";
    const nlohmann::json by_line = report_json(puma.pid(), {"--by", "ruby", "--born-after", born});
    ASSERT_FALSE(by_line.at("sites").empty()) << by_line.dump(1);
    EXPECT_TRUE(at_ruby_line(by_line.at("sites")[0], controller, leak_line)) << by_line.at("sites")[0].dump(1);
    EXPECT_GE(by_line.at("sites")[0].at("live_blocks").get<long long>(), kRequests + kMoreRequests);
    const nlohmann::json native = report_json(puma.pid(), {"--born-after", born});
    EXPECT_EQ(
        sum_of(rows_allocated_by(native, kExtension, "toc_state_new")),
        (Counters{kRequests + kMoreRequests, (kRequests + kMoreRequests) * kStateSize, kRequests + kMoreRequests, 0}));
    EXPECT_LT(native.at("births").at("selection").at("live_bytes").get<long long>(),
              native.at("totals").at("live_bytes").get<long long>() / 4)
        << "the boot's memory is left out";

    EXPECT_EQ(puma.stop(), 0);
    EXPECT_FALSE(segment_exists(puma.pid())) << "a clean exit removes the segment";
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
