// The reader's memory on a big segment: no command may need more than twice the segment's
// resident size, plus a fixed base (issue 14, "big processes"). Peak RSS, not time: the kernel's
// count of a child's high-water mark is the same run after run within a few pages, where times on
// a shared machine are not; timings belong to test/bench/reader_bench.sh.
#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"
#include "top_pane.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace leakwrap::e2e {
namespace {

// kReaderBaseKiB (harness.h) is what the reader needs whatever the segment: its own code and libraries (libdw, libc,
// the C++ runtime linked in, ...: 4.0-4.4 MiB resident for `leakwrap-report --version`), the symbol tables of the
// modules it symbolizes, the allocator's arenas and the output's buffers. Twice the segment holds the rest: the parse
// gives the copy back as it goes, and the sites and stacks it makes are about 1.3 times what they were made of. Four
// things are not in it. glibc's DWARF, unless --libc-lines asks for it: libdw inflates its compressed sections whole,
// 16 MiB more. elfutils' debuginfod client, which it loaded with libcurl and its TLS and Kerberos libraries (4 MiB)
// even with no server named; the reader asks it only when DEBUGINFOD_URLS names one. libprotobuf (1.8 MiB), which pprof
// no longer needs. And cpp-httplib with OpenSSL and brotli (4 MiB in every command), since serve has its own server. On
// many_stacks (a 6.0 MiB segment, so a bound of 17.1 MiB) the text report takes 9.6 MiB, JSON of every row 9.5,
// folded 9.6, pprof 9.7, a watch sample 9.6, one of every site 9.9, and `diff` of two of those 15.4; before native
// frames were kept as 4-byte indexes into a table of distinct addresses, 11.8, 12.5, 12.3, 12.7, 12.2, 13.2 and 15.5
// (with sites of 48 bytes, not 32: 12.8, 13.3, 13.1, 13.7, 12.6, 13.9 and 15.9). The base was 6 MiB until the parse
// checked its stacks through bit sets and gave the stack table back as it read it (16.5-16.7 MiB then); with the shared
// C++ runtime they took 17.4-17.6, 25.0-25.3 with those libraries, and before the reader's stacks, rows and samples
// were made compact the reports took 45.7-46.2 MiB, pprof 62.2 and a watch sample of every site 113.9.

class ReaderMemory : public ::testing::Test {
protected:
    void SetUp() override {
        target_.wait_ready();
        // --top 1: this process's own size must stay small, see reader_peak_kib.
        const Completed completed = run_report({pid(), "--format", "json", "--top", "1"});
        ASSERT_EQ(completed.exit_code, 0) << completed.err;
        const nlohmann::json report = nlohmann::json::parse(completed.out);
        sites_ = report.at("totals").at("sites").get<std::size_t>();
        segment_kib_ = static_cast<long>(
            report.at("totals").at("memory").at("leakwrap_segment_resident_bytes").get<uint64_t>() / 1024);
        bound_kib_ = reader_memory_bound_kib(segment_kib_);
    }
    void TearDown() override { target_.release_and_wait(); }

    std::string pid() const { return std::to_string(target_.pid()); }
    std::string file(const char* name) const { return (directory_.path() / name).string(); }

    // The bound, with what was measured, for the failure message.
    void expect_within_bound(const char* command, long peak_kib) const {
        EXPECT_LE(peak_kib, bound_kib_) << command << ": peak RSS " << peak_kib << " KiB for " << sites_
                                        << " sites; the segment is " << segment_kib_ << " KiB resident, the bound 2 x "
                                        << segment_kib_ << " + " << kReaderBaseKiB << " KiB";
    }

    Target target_{
        {paths::program("many_stacks")},
        Environment::profiled().set("LEAKWRAP_DEPTH", std::to_string(ground_truth::many_stacks::kLevels + 2))};
    std::size_t sites_ = 0;
    long segment_kib_ = 0;
    long bound_kib_ = 0;
    TemporaryDirectory directory_;
};

TEST_F(ReaderMemory, IsBoundedByTwiceTheSegmentInEveryCommand) {
    // The per-site costs must dominate the base for the bound to say anything.
    ASSERT_GE(sites_, ground_truth::many_stacks::kStacks);
    ASSERT_GE(segment_kib_, 4 * 1024) << "a segment too small to tell per-site costs from the base";

    expect_within_bound("text report", reader_peak_kib({pid()}));
    expect_within_bound("--format json --top 0", reader_peak_kib({pid(), "--format", "json", "--top", "0"}));
    expect_within_bound("--format folded", reader_peak_kib({pid(), "--format", "folded"}));
    expect_within_bound("--format pprof", reader_peak_kib({pid(), "--format", "pprof", "-o", file("p.pb.gz")}));
    expect_within_bound("one watch sample",
                        reader_peak_kib({"watch", pid(), "--count", "1", "--out", file("w.jsonl")}));
    expect_within_bound(
        "one watch sample of every site",
        reader_peak_kib({"watch", pid(), "--count", "1", "--min-bytes", "0", "--out", file("a.jsonl")}));
    reader_peak_kib({"watch", pid(), "--count", "1", "--min-bytes", "0", "--out", file("b.jsonl")});
    expect_within_bound("diff of two series lines of every site",
                        reader_peak_kib({"diff", file("a.jsonl"), file("b.jsonl")}));
}

// watch gives each sample's sites back before it reads the next: its peak over three samples
// (two samples would meet at the second one's parse) is its first's, plus what it keeps from
// sample to sample (each row's live bytes at the first sample, the symbolizer's tables, the code
// that the first sample's parse ran without): 1.35-1.9 MiB on this segment. Clearing the sites
// with `= {}`, which keeps their memory, holds two samples' sites: 2.3-2.6 MiB. Single runs spread
// by 0.4 MiB, so the medians of three are compared. On the Rails example five default samples
// took 20.6 MiB with that bug, and take 13.6 now (debug build, as README).
TEST_F(ReaderMemory, WatchHoldsOneSampleAtATime) {
    const auto median_peak_kib = [](const std::vector<std::string>& arguments) {
        std::vector<long> peaks;
        for (int run = 0; run < 3; ++run) peaks.push_back(reader_peak_kib(arguments));
        std::sort(peaks.begin(), peaks.end());
        return peaks[1];
    };
    const long one = median_peak_kib({"watch", pid(), "--count", "1", "--min-bytes", "0", "--out", file("one.jsonl")});
    const long three = median_peak_kib(
        {"watch", pid(), "--count", "3", "--interval", "50ms", "--min-bytes", "0", "--out", file("three.jsonl")});
    EXPECT_LE(three, one + 2048) << "one sample: " << one << " KiB; the segment is " << segment_kib_ << " KiB resident";
    expect_within_bound("three watch samples of every site", three);
}

// top samples the process again and again: it gives the last sample back before it reads the
// next, so that it never holds two, and makes only the rows it shows. Its peak after many
// samples is that of its first, and what the view keeps from one sample to the next (each row's
// live bytes at the first sample, the labels shown, the symbolizer's tables of the modules those
// name): 14.2 MiB in all on this segment, within the bound of every command. When it held a
// sample while it read the next, and made every row, it took 24.0 MiB.
TEST_F(ReaderMemory, TopHoldsOneSampleAtATime) {
    if (paths::tmux.empty()) GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
    TmuxPane pane({pid(), "--interval", "200ms"});
    pane.wait_for_text("(sample 1,");
    const pid_t top = pane.top_pid();
    const long first = peak_resident_kib(top);
    ASSERT_GT(first, 0) << "no VmHWM for top, pid " << top;
    pane.wait_for_text("(sample 8,");
    const long peak = peak_resident_kib(top);
    EXPECT_LE(peak, first + 3 * 1024) << "the segment is " << segment_kib_ << " KiB resident";
    expect_within_bound("top after 8 samples", peak);
    pane.send_keys("q");
    pane.expect_exit_and_terminal_restored(0);
}

}  // namespace
}  // namespace leakwrap::e2e
