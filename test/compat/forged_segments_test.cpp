// Segments forged from a real one: whose pid now belongs to another process, reported stale and
// never alive, and whose site counts more frees than allocations, reported with one warning line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <leakwrap/segment_layout.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "one_warning.h"
#include "process_identity.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

// pid reuse: a real segment, re-labelled as belonging to a live process that did not write it.
class ForgedSegment {
public:
    // The segment of a finished alloc_kinds run, kept with LEAKWRAP_KEEP=1.
    static std::vector<char> real_segment() {
        Target target({paths::program("alloc_kinds")},
                      Environment::profiled()
                          .set("LEAKWRAP_KEEP", "1")
                          .set("LEAKWRAP_MAX_SITES", std::to_string(layout::kMinSiteCapacity + 64)));
        target.wait_ready();
        const pid_t pid = target.pid();
        EXPECT_EQ(target.release_and_wait(), 0);
        std::ifstream file(segment_path(pid), std::ios::binary);
        std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
        fs::remove(segment_path(pid));
        return bytes;
    }

    // Writes `segment` as `path`, claiming `pid`, still running, started at `start_time_ticks`.
    ForgedSegment(fs::path path, std::vector<char> segment, pid_t pid, uint64_t start_time_ticks)
        : path_(std::move(path)) {
        layout::Header header;
        std::memcpy(&header, segment.data(), sizeof header);
        header.pid = pid;
        header.start_time_ticks = start_time_ticks;
        header.process_state = layout::kProcessRunning;
        std::memcpy(segment.data(), &header, sizeof header);
        const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("cannot create " + path_.string());
        const bool written = write(fd, segment.data(), segment.size()) == static_cast<ssize_t>(segment.size());
        close(fd);
        if (!written) throw std::runtime_error("cannot write " + path_.string());
    }
    ~ForgedSegment() { fs::remove(path_); }
    ForgedSegment(const ForgedSegment&) = delete;
    ForgedSegment& operator=(const ForgedSegment&) = delete;

private:
    fs::path path_;
};

TEST(Faults, SegmentOfARecycledPidIsStaleNeverAlive) {
    const std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    Target unrelated({"/bin/sleep", "60"}, Environment::bare());
    const std::optional<uint64_t> start = process_start_time_ticks(unrelated.pid());
    ASSERT_TRUE(start.has_value());
    const uint64_t real_start = *start;
    {
        const ForgedSegment forged(segment_path(unrelated.pid()), segment, unrelated.pid(), real_start + 1);
        EXPECT_EQ(report_json(unrelated.pid()).at("state"), "stale");
        const Completed list = run_report({"--list"});
        bool listed_stale = false;
        for (const std::string& line : lines_of(list.out))
            listed_stale = listed_stale || (line.starts_with(std::to_string(unrelated.pid()) + " ") &&
                                            line.find("stale") != std::string::npos);
        EXPECT_TRUE(listed_stale) << list.out;
    }
    // The same bytes with the true start time: the check above is about the start time alone.
    const ForgedSegment genuine(segment_path(unrelated.pid()), segment, unrelated.pid(), real_start);
    EXPECT_EQ(report_json(unrelated.pid()).at("state"), "alive");
}

// A site counting more frees than allocations is corrupt, or a live copy caught it mid-update:
// the report is made, with one warning line naming the site, and the site's live counts are 0,
// never a wrapped-around 2^64.
TEST(Faults, SiteWithMoreFreesThanAllocationsIsReportedWithOneWarningLine) {
    std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    layout::Header header;
    std::memcpy(&header, segment.data(), sizeof header);
    uint32_t corrupted = 0;
    layout::SiteRecord record{};
    for (uint32_t slot = layout::kOverflowSites; slot < std::min(header.sites_claimed, header.site_capacity); ++slot) {
        char* at = segment.data() + header.sites_offset + uint64_t{slot} * header.site_record_size;
        std::memcpy(&record, at, sizeof record);
        if (record.state != layout::kReady) continue;
        record.frees = record.allocs + 1000000;  // more than its delta entries can add to allocs
        std::memcpy(at, &record, sizeof record);
        corrupted = slot;
        break;
    }
    ASSERT_NE(corrupted, 0u) << "alloc_kinds left no ready site";
    const TemporaryDirectory scratch;
    const fs::path copy = scratch.path() / "corrupt";
    const ForgedSegment written(copy, segment, header.pid, header.start_time_ticks);

    for (const char* format : {"text", "json"}) {
        const Completed report = run_report({"--segment", copy.string(), "--format", format, "--top", "0"});
        EXPECT_EQ(report.exit_code, 0) << report.err;
        const std::vector<std::string> lines = lines_of(report.err);
        ASSERT_EQ(lines.size(), 1u) << report.err;
        EXPECT_TRUE(lines[0].starts_with("leakwrap-report: warning: site " + std::to_string(corrupted) +
                                         " counts more frees than allocations"))
            << lines[0];
        if (std::string(format) == "json") {
            for (const auto& site : nlohmann::json::parse(report.out).at("sites"))
                EXPECT_LT(site.at("live_blocks").get<uint64_t>(), uint64_t{1} << 32) << site;
        }
    }
}

TEST(Faults, CopiedSegmentOfARecycledPidIsStaleNeverAlive) {
    const std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    const TemporaryDirectory scratch;
    const fs::path copy = scratch.path() / "forged";
    const ForgedSegment forged(copy, segment, getpid(), process_start_time_ticks(getpid()).value() + 1);
    const Completed report = run_report({"--segment", copy.string(), "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_EQ(nlohmann::json::parse(report.out).at("state"), "stale");
}

}  // namespace
}  // namespace leakwrap::e2e
