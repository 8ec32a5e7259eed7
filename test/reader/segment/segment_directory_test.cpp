#include "segment_directory.h"
#include "process_identity.h"
#include "segment_builder.h"
#include "temporary_directory.h"
#include "segment_cleaning.h"
#include "segment_listing.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <sstream>

namespace leakwrap {
namespace {

using testing::kAbsentPid;
using testing::SegmentBuilder;
using testing::write_file;

TEST(SegmentName, AcceptsOnlyTheExactPattern) {
    EXPECT_EQ(pid_from_segment_name("leakwrap.123"), 123);
    EXPECT_EQ(pid_from_segment_name("leakwrap.2147483647"), 2147483647);
    for (const char* name :
         {"leakwrap.", "leakwrap.0", "leakwrap.0123", "leakwrap.12a", "leakwrap.123.tmp", "leakwrap.-5", "leakwrap.+5",
          "leakwrap. 5", "leakwrap.2147483648", "leakwrap.99999999999999999999", "xleakwrap.1", "leakwrap_1", ""})
        EXPECT_FALSE(pid_from_segment_name(name).has_value()) << name;
}

TEST(SegmentName, BuildsThePathOfAPid) { EXPECT_EQ(segment_path(42), "/dev/shm/leakwrap.42"); }

// A segment directory holding one segment of every kind --list and --clean must tell apart.
class SegmentDirectoryTest : public ::testing::Test {
protected:
    void SetUp() override {
        add_segment(alive_pid_, [](SegmentBuilder& b) {
            b.start_time_ticks = process_start_time_ticks(::getpid()).value();
            b.boot_id = current_boot_id();
            b.sites = {{.allocs = 3, .alloc_bytes = 3000}};
        });
        add_segment(kAbsentPid, [](SegmentBuilder&) {});
        add_segment(exited_pid_, [](SegmentBuilder& b) { b.process_state = layout::kProcessExited; });
        add_segment(stale_pid_, [](SegmentBuilder& b) { b.start_time_ticks = 1; });
        write_file(path_of(corrupt_dead_pid_), garbage());
        write_file(path_of(corrupt_running_pid_), garbage());
        std::filesystem::create_symlink(path_of(kAbsentPid), path_of(symlink_pid_));
        write_file(directory_.path() / "leakwrap.notapid", garbage());
        write_file(directory_.path() / "other", garbage());
    }

    template <class Customize>
    void add_segment(pid_t pid, Customize customize) {
        SegmentBuilder builder;
        builder.pid = pid;
        customize(builder);
        write_file(path_of(pid), builder.build());
    }

    std::filesystem::path path_of(pid_t pid) const { return segment_path(pid, directory_.path()); }

    static std::vector<std::byte> garbage() { return std::vector<std::byte>(512, std::byte{0x5a}); }

    TemporaryDirectory directory_;
    const pid_t alive_pid_ = ::getpid();
    const pid_t exited_pid_ = 1;  // running, but its segment says it exited
    const pid_t stale_pid_ = ::getppid();
    const pid_t corrupt_dead_pid_ = kAbsentPid + 1;
    const pid_t corrupt_running_pid_ = 2;  // kthreadd, or at least some long-lived process
    const pid_t symlink_pid_ = kAbsentPid + 2;
};

TEST_F(SegmentDirectoryTest, FindsOnlyExactSegmentNamesInPidOrder) {
    std::vector<pid_t> pids;
    for (const auto& entry : find_segments(directory_.path())) pids.push_back(entry.pid);
    std::vector<pid_t> expected = {alive_pid_,        kAbsentPid,           exited_pid_, stale_pid_,
                                   corrupt_dead_pid_, corrupt_running_pid_, symlink_pid_};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(pids, expected);
}

TEST_F(SegmentDirectoryTest, RefusesASegmentThatClaimsAnotherPid) {
    std::filesystem::rename(path_of(kAbsentPid), path_of(kAbsentPid + 10));
    try {
        read_segment({kAbsentPid + 10, path_of(kAbsentPid + 10)});
        FAIL() << "accepted a segment under another pid's name";
    } catch (const SegmentError& error) {
        EXPECT_NE(std::string(error.what()).find("claims to belong to pid"), std::string::npos);
    }
}

TEST_F(SegmentDirectoryTest, ListsEverySegmentWithItsStateOrItsError) {
    std::ostringstream out;
    list_segments(out, directory_.path());
    const std::string listing = out.str();
    const auto line_of = [&](pid_t pid) {
        const auto start = listing.find('\n' + std::to_string(pid) + ' ');
        return start == std::string::npos ? std::string()
                                          : listing.substr(start + 1, listing.find('\n', start + 1) - start - 1);
    };
    EXPECT_EQ(listing.substr(0, 3), "PID");
    EXPECT_NE(line_of(alive_pid_).find("alive"), std::string::npos) << listing;
    EXPECT_NE(line_of(alive_pid_).find(" 3000 "), std::string::npos) << listing;
    EXPECT_NE(line_of(alive_pid_).find("/usr/bin/leaky"), std::string::npos) << listing;
    // Processes of one executable (puma workers) differ in their command lines.
    EXPECT_NE(listing.substr(0, listing.find('\n')).find("  COMMAND"), std::string::npos) << listing;
    // A live owner shows its command line of now (puma retitles forked workers); a gone one the
    // recorded one.
    EXPECT_NE(line_of(alive_pid_).find("  " + ::testing::internal::GetArgvs().front()), std::string::npos) << listing;
    EXPECT_EQ(line_of(alive_pid_).find("leaky --fast"), std::string::npos) << listing;
    EXPECT_NE(line_of(kAbsentPid).find("  leaky --fast"), std::string::npos) << listing;
    EXPECT_NE(line_of(kAbsentPid).find("killed?"), std::string::npos) << listing;
    EXPECT_NE(line_of(exited_pid_).find("exited"), std::string::npos) << listing;
    EXPECT_NE(line_of(stale_pid_).find("stale"), std::string::npos) << listing;
    EXPECT_NE(line_of(corrupt_dead_pid_).find("unreadable"), std::string::npos) << listing;
    EXPECT_NE(line_of(corrupt_dead_pid_).find("bad magic"), std::string::npos) << listing;
    EXPECT_NE(line_of(symlink_pid_).find("symbolic link"), std::string::npos) << listing;
}

TEST_F(SegmentDirectoryTest, CleansDeadStaleExitedAndAbandonedCorruptSegmentsOnly) {
    std::ostringstream out;
    const auto result = clean_segments(out, directory_.path());

    EXPECT_EQ(result.removed, 4u) << out.str();
    EXPECT_EQ(result.failed, 0u);
    for (const pid_t removed : {kAbsentPid, exited_pid_, stale_pid_, corrupt_dead_pid_}) {
        EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path_of(removed)))) << removed;
        EXPECT_NE(out.str().find("removed " + path_of(removed).string()), std::string::npos);
    }
    for (const pid_t kept : {alive_pid_, corrupt_running_pid_, symlink_pid_})
        EXPECT_TRUE(std::filesystem::exists(std::filesystem::symlink_status(path_of(kept)))) << kept;
    EXPECT_TRUE(std::filesystem::exists(directory_.path() / "leakwrap.notapid"));
    EXPECT_NE(out.str().find("removed 4 segment(s), kept 3"), std::string::npos) << out.str();
}

TEST_F(SegmentDirectoryTest, LeavesAnotherUsersDeadSegmentAlone) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
    ASSERT_EQ(::chown(path_of(kAbsentPid).c_str(), 65534, 65534), 0);
    std::ostringstream out;
    clean_segments(out, directory_.path());
    EXPECT_TRUE(std::filesystem::exists(path_of(kAbsentPid)));
}

}  // namespace
}  // namespace leakwrap
