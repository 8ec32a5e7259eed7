// The reader's memory on a Ruby segment (issue 14, "big processes"): the Rails example's, whose
// 110,000 sites name stacks of few native frames and long Ruby backtraces, where many_stacks
// (test/e2e/reader_memory_test.cpp) has deep native stacks. What the segment's contents cost is
// measured against the same command on a Ruby process that has done nothing, so that the
// reader's own code, libdw and libruby's symbol table are not counted as the segment's.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ruby_support.h"
#include "temporary_directory.h"

namespace leakwrap::e2e::ruby {
namespace {

// Each command's growth over the idle Ruby process, per KiB of segment grown: issue 14's "no
// reader command needs more than twice the segment", held to 1.5 so that a regression shows
// before it reaches 2. Measured on the Rails example: text 1.15, JSON of every row 1.07, folded
// 1.07, pprof 1.20, `--by ruby` 1.21, a watch sample of every site 1.11 (they were 1.5, 1.5,
// 1.5, 1.65, 1.35 and 1.6 with sites of 48 bytes and Ruby frame nodes of 16).
constexpr double kMaxGrowthPerSegmentKiB = 1.5;

struct ReaderPeaks {
    long segment_kib = 0;
    std::vector<std::pair<std::string, long>> peaks;  // command -> peak RSS in KiB
};

ReaderPeaks measure_reader(pid_t target, const std::filesystem::path& directory) {
    const std::string pid = std::to_string(target);
    // --top 1: this process stays small (see reader_peak_kib).
    const Completed report = run_report({pid, "--format", "json", "--top", "1"});
    if (report.exit_code != 0) throw std::runtime_error("report failed: " + report.err);
    ReaderPeaks measured;
    measured.segment_kib = static_cast<long>(nlohmann::json::parse(report.out)
                                                 .at("totals")
                                                 .at("memory")
                                                 .at("leakwrap_segment_resident_bytes")
                                                 .get<uint64_t>() /
                                             1024);
    const std::string profile = (directory / ("profile." + pid + ".pb.gz")).string();
    const std::string series = (directory / ("series." + pid + ".jsonl")).string();
    const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
        {"text report", {pid}},
        {"--format json --top 0", {pid, "--format", "json", "--top", "0"}},
        {"--format folded", {pid, "--format", "folded"}},
        {"--format pprof", {pid, "--format", "pprof", "-o", profile}},
        {"--by ruby", {pid, "--by", "ruby"}},
        {"one watch sample of every site", {"watch", pid, "--count", "1", "--min-bytes", "0", "--out", series}},
        {"five watch samples", {"watch", pid, "--count", "5", "--interval", "100ms", "--out", series}},
    };
    for (const auto& [name, arguments] : commands) measured.peaks.emplace_back(name, reader_peak_kib(arguments));
    return measured;
}

TEST(RubyReaderMemory, GrowsByAtMostTwiceTheSegmentOnARailsApp) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    ASSERT_FALSE(paths::puma.empty()) << "puma is not installed (scripts/setup.sh installs it)";
    const TemporaryDirectory scratch;
    const std::filesystem::path& directory = scratch.path();

    Target idle({paths::ruby, "-e", "STDOUT.puts 'READY'; STDOUT.flush; STDIN.gets"}, Environment::profiled());
    idle.wait_ready();
    const ReaderPeaks base = measure_reader(idle.pid(), directory);
    idle.release_and_wait();

    Puma puma({"-C", paths::source("examples/rails/config/puma.rb"), paths::source("examples/rails/config.ru")});
    send_requests(puma.url(), 20);
    const ReaderPeaks rails = measure_reader(puma.pid(), directory);

    // The Rails segment must dwarf the idle one for the ratio to say anything.
    ASSERT_GE(rails.segment_kib, 4 * 1024);
    ASSERT_GE(rails.segment_kib, 8 * base.segment_kib);
    const long grown_kib = rails.segment_kib - base.segment_kib;
    for (std::size_t i = 0; i < rails.peaks.size(); ++i) {
        const auto& [command, peak] = rails.peaks[i];
        const long idle_peak = base.peaks[i].second;
        const double per_segment_kib = static_cast<double>(peak - idle_peak) / static_cast<double>(grown_kib);
        std::cout << command << ": " << idle_peak << " KiB on an idle Ruby (segment " << base.segment_kib << " KiB), "
                  << peak << " KiB on Rails (segment " << rails.segment_kib << " KiB): " << per_segment_kib
                  << " KiB per KiB of segment\n";
        EXPECT_LE(per_segment_kib, kMaxGrowthPerSegmentKiB) << command;
    }
}

}  // namespace
}  // namespace leakwrap::e2e::ruby
