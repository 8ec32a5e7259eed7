#include "segment_file.h"
#include "segment_builder.h"
#include "temporary_directory.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace leakwrap {
namespace {

using namespace std::chrono_literals;
using testing::SegmentBuilder;
using testing::write_file;

std::string read_error(const std::filesystem::path& path, const ReadOptions& options = {}) {
    try {
        read_segment_file(path, options);
    } catch (const std::exception& error) {
        return error.what();
    }
    return "";
}

class SegmentFileTest : public ::testing::Test {
protected:
    std::filesystem::path segment_file(mode_t mode = 0600) {
        const auto path = directory_.path() / "segment";
        write_file(path, SegmentBuilder().build(), mode);
        return path;
    }

    TemporaryDirectory directory_;
};

TEST_F(SegmentFileTest, ReadsAPrivateRegularFile) {
    EXPECT_EQ(read_segment_file(segment_file()).exe, "/usr/bin/leaky");
}

TEST_F(SegmentFileTest, RefusesASymlink) {
    const auto link = directory_.path() / "link";
    std::filesystem::create_symlink(segment_file(), link);
    EXPECT_EQ(read_error(link), link.string() + " is a symbolic link; refusing");
}

TEST_F(SegmentFileTest, RefusesAGroupWritableFile) {
    const auto path = segment_file(0620);
    EXPECT_EQ(read_error(path), path.string() + " is group/world-writable (mode 0620); refusing");
}

TEST_F(SegmentFileTest, RefusesAWorldWritableFile) {
    const auto path = segment_file(0602);
    EXPECT_EQ(read_error(path), path.string() + " is group/world-writable (mode 0602); refusing");
}

TEST_F(SegmentFileTest, RefusesAnotherUsersFileEvenForRoot) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
    const auto path = segment_file();
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    EXPECT_EQ(read_error(path), path.string() +
                                    " belongs to nobody (uid 65534), not to you, root (uid 0): only "
                                    "your own segments are trusted; run leakwrap-report as that user "
                                    "(sudo -u nobody leakwrap-report ...)");
}

TEST_F(SegmentFileTest, RefusesADirectoryAndAFifoWithoutBlocking) {
    EXPECT_EQ(read_error(directory_.path()), directory_.path().string() + " is not a regular file; refusing");
    const auto fifo = directory_.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(read_error(fifo), fifo.string() + " is not a regular file; refusing");
}

TEST_F(SegmentFileTest, ReportsAMissingFileWithItsErrno) {
    try {
        read_segment_file(directory_.path() / "missing");
        FAIL() << "read a missing file";
    } catch (const SegmentFileError& error) {
        EXPECT_EQ(error.error_number(), ENOENT);
    }
}

TEST_F(SegmentFileTest, GivesUpOnAHeaderThatNeverBecomesReady) {
    auto bytes = SegmentBuilder().build();
    testing::patch_header(bytes, [](layout::Header& h) { h.state = layout::kEmpty; });
    const auto path = directory_.path() / "initializing";
    write_file(path, bytes);
    const auto started = std::chrono::steady_clock::now();
    EXPECT_NE(read_error(path, {.ready_timeout = 50ms}).find("not ready"), std::string::npos);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 50ms);
}

TEST_F(SegmentFileTest, WaitsForAWriterThatIsStillInitializing) {
    auto bytes = SegmentBuilder().build();
    testing::patch_header(bytes, [](layout::Header& h) { h.state = layout::kEmpty; });
    const auto path = directory_.path() / "initializing";
    write_file(path, bytes);
    std::thread writer([&] {
        std::this_thread::sleep_for(30ms);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        const uint32_t ready = layout::kReady;
        EXPECT_EQ(::pwrite(fd, &ready, sizeof(ready), offsetof(layout::Header, state)),
                  static_cast<ssize_t>(sizeof(ready)));
        ::close(fd);
    });
    EXPECT_EQ(read_error(path, {.ready_timeout = 5s}), "");
    writer.join();
}

TEST_F(SegmentFileTest, DoesNotWaitForGarbage) {
    const auto path = directory_.path() / "garbage";
    write_file(path, std::vector<std::byte>(4096, std::byte{0x5a}));
    EXPECT_EQ(read_error(path, {.ready_timeout = 10s}), "bad magic: not a leakwrap segment");
}

// A concurrent truncate makes the copy fault with SIGBUS; the guard must turn that into an
// error (or a clean read of whatever size the file had), never a crash.
TEST_F(SegmentFileTest, SurvivesTruncationDuringTheCopy) {
    SegmentBuilder builder;
    builder.site_capacity = 20001;  // a few MiB in use, so the copy takes long enough to be cut
    builder.sites.resize(20000, {.allocs = 1});
    const auto bytes = builder.build();
    const auto path = directory_.path() / "shrinking";
    write_file(path, bytes);

    std::atomic<bool> done = false;
    std::thread truncator([&] {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
        while (!done) {
            EXPECT_EQ(::ftruncate(fd, 4096), 0);
            EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
        }
        ::close(fd);
    });
    for (int attempt = 0; attempt < 200; ++attempt) {
        try {
            read_segment_file(path, {.ready_timeout = 0ms});
        } catch (const SegmentFileError&) {
        } catch (const SegmentError&) {
        }
    }
    done = true;
    truncator.join();
}

// Like the writer's segment: the file has its full size, but only the blocks holding data exist,
// and the bin and site delta tables, which the writer backs in full when it creates the segment.
void write_sparse_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    layout::Header header;
    std::memcpy(&header, bytes.data(), sizeof(header));
    const uint64_t bins_end =
        header.bins_offset + uint64_t{layout::kSizeClassCount} * header.bin_shards * sizeof(layout::BinCounters);
    const uint64_t deltas_end =
        header.site_deltas_offset + uint64_t{header.bin_shards} * header.site_delta_slots * sizeof(layout::SiteDelta);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
    constexpr size_t kBlock = 4096;
    for (size_t at = 0; at < bytes.size(); at += kBlock) {
        const size_t length = std::min(kBlock, bytes.size() - at);
        const bool in_bins = at < bins_end && header.bins_offset < at + length;
        const bool in_deltas = at < deltas_end && header.site_deltas_offset < at + length;
        if (!in_bins && !in_deltas &&
            std::all_of(bytes.begin() + at, bytes.begin() + at + length, [](std::byte b) { return b == std::byte{0}; }))
            continue;
        ASSERT_EQ(::pwrite(fd, bytes.data() + at, length, static_cast<off_t>(at)), static_cast<ssize_t>(length));
    }
    ::close(fd);
}

blkcnt_t allocated_blocks(const std::filesystem::path& path) {
    struct stat status {};
    EXPECT_EQ(::stat(path.c_str(), &status), 0);
    return status.st_blocks;
}

// Reading a hole of a tmpfs file through a shared mapping allocates it: the reader must touch
// only the parts in use, or every report would blow a segment up to its full size.
TEST_F(SegmentFileTest, LeavesTheUnusedPartOfASparseSegmentUnallocated) {
    SegmentBuilder builder;
    builder.site_capacity = 100000;  // 12.8 MB of site table, one slot in use
    builder.sites = {{.allocs = 1, .frames = {0x1234}}};
    builder.site_delta_slots = 64;  // as many as the writer keeps
    builder.deltas = {{.shard = 2, .site = testing::kFirstSiteSlot, .allocs = 1}};
    const auto path = std::filesystem::path("/dev/shm") / ("leakwrap-reader-test." + std::to_string(::getpid()));
    write_sparse_file(path, builder.build());
    const blkcnt_t before = allocated_blocks(path);

    const auto snapshot = read_segment_file(path);
    EXPECT_EQ(snapshot.sites_in_use(), 1u);
    EXPECT_EQ(allocated_blocks(path), before);
    std::filesystem::remove(path);
}

// The copy must take the delta table along: left out, it would read as zeros (entries naming
// site 0 with nothing in them) and the counts below would come out short.
TEST_F(SegmentFileTest, CopiesTheSiteDeltaTable) {
    SegmentBuilder builder;
    builder.site_capacity = 20000;
    builder.sites = {{.allocs = 3, .alloc_bytes = 300, .frames = {0x1234}}};
    builder.overflow_sites[0] = {.allocs = 1, .alloc_bytes = 8};
    builder.site_delta_slots = 64;
    builder.deltas = {{.shard = 0, .site = testing::kFirstSiteSlot, .frees = 2, .free_bytes = 200},
                      {.shard = 2, .site = testing::kFirstSiteSlot, .allocs = 4, .alloc_bytes = 400, .slot = 63},
                      {.shard = 2, .site = 0, .allocs = 5, .alloc_bytes = 40}};
    const auto path = directory_.path() / "deltas";
    write_sparse_file(path, builder.build());

    const auto snapshot = read_segment_file(path);
    const auto& site = snapshot.sites.back();
    ASSERT_EQ(site.id, testing::kFirstSiteSlot);
    EXPECT_EQ(site.counters().allocs, 7u);
    EXPECT_EQ(site.counters().live_bytes(), 500u);
    EXPECT_EQ(snapshot.sites.front().counters().allocs, 6u);
    EXPECT_EQ(snapshot.totals.allocs, 13u);
}

// Layout 13 (R6): the writer backs a shard when a thread first claims it; the shards at and
// beyond bin_shards_backed, but the last, are not read, whatever the file holds there.
TEST_F(SegmentFileTest, ReadsOnlyTheShardsTheWriterBacked) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 3, .alloc_bytes = 300, .frames = {0x1234}}};
    builder.bin_shards = 4;
    builder.bin_shards_backed = 1;
    builder.site_delta_slots = 8;
    builder.deltas = {{.shard = 0, .site = testing::kFirstSiteSlot, .allocs = 1, .alloc_bytes = 100},
                      {.shard = 1, .site = testing::kFirstSiteSlot, .allocs = 20, .alloc_bytes = 2000},
                      {.shard = 3, .site = testing::kFirstSiteSlot, .frees = 2, .free_bytes = 200}};
    const auto path = directory_.path() / "backed";
    write_sparse_file(path, builder.build());
    const auto& site = read_segment_file(path).sites.back();
    ASSERT_EQ(site.id, testing::kFirstSiteSlot);
    EXPECT_EQ(site.counters().allocs, 4u);
    EXPECT_EQ(site.counters().frees, 2u);
    EXPECT_EQ(site.counters().live_bytes(), 200u);

    auto bytes = builder.build();
    testing::patch_header(bytes, [](layout::Header& h) { h.bin_shards_backed = 4; });
    write_file(path, bytes);
    EXPECT_NE(read_error(path).find("bin_shards_backed 4 is not below bin_shards 4"), std::string::npos);
}

// A corrupt header's delta table size (here (2^32 - 1) x 2^31 entries of 40 bytes, more than 64
// bits can count) must not steer the copy past the file; the parser then names the field.
TEST_F(SegmentFileTest, RefusesAnAbsurdDeltaTableWithoutCopyingPastTheFile) {
    for (const uint64_t offset : {uint64_t{4096}, ~uint64_t{0} - 64}) {
        auto bytes = SegmentBuilder().build();
        testing::patch_header(bytes, [offset](layout::Header& h) {
            h.bin_shards = 0xffffffffu;
            h.site_delta_slots = 0x80000000u;
            h.site_deltas_offset = offset;
        });
        const auto path = directory_.path() / "absurd";
        write_file(path, bytes);
        EXPECT_NE(read_error(path).find("bin_shards 4294967295 is outside"), std::string::npos) << offset;
        testing::patch_header(bytes, [](layout::Header& h) { h.bin_shards = 3; });
        write_file(path, bytes);
        EXPECT_NE(read_error(path).find("site_delta_slots 2147483648 exceeds the limit"), std::string::npos) << offset;
    }
}

}  // namespace
}  // namespace leakwrap
