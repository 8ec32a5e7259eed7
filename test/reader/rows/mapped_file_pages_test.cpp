// drop_whole_file_mappings on real mappings of a real file, its pages' presence read from
// /proc/self/pagemap.
#include "mapped_file_pages.h"
#include "temporary_directory.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace leakwrap {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// Pages of [address, address + bytes) this process has mapped in its page tables.
std::size_t present_pages(const void* address, std::size_t bytes) {
    const int page_map = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (page_map < 0) return SIZE_MAX;
    std::vector<uint64_t> entries(bytes / kPage);
    const auto first = reinterpret_cast<uintptr_t>(address) / kPage;
    const auto got = ::pread(page_map, entries.data(), entries.size() * sizeof(uint64_t),
                             static_cast<off_t>(first * sizeof(uint64_t)));
    ::close(page_map);
    if (got != static_cast<ssize_t>(entries.size() * sizeof(uint64_t))) return SIZE_MAX;
    std::size_t present = 0;
    for (const uint64_t entry : entries) present += (entry >> 63) & 1;
    return present;
}

class MappedFilePages : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = (directory_.path() / "mapped").string();
        std::ofstream file(path_, std::ios::binary);
        const std::string page(kPage, 'x');
        for (std::size_t i = 0; i < kPages; ++i) file << page;
        file.close();
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(fd_, 0);
    }
    void TearDown() override { ::close(fd_); }

    // Maps `pages` of the file from its start, privately and writable as libelf does, and
    // reads every page of it.
    char* map_and_read(std::size_t pages) {
        void* address = ::mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
        EXPECT_NE(address, MAP_FAILED);
        auto* bytes = static_cast<char*>(address);
        unsigned sum = 0;
        for (std::size_t i = 0; i < pages; ++i) sum += static_cast<unsigned char>(bytes[i * kPage]);
        EXPECT_EQ(sum, pages * 'x');
        EXPECT_EQ(present_pages(bytes, pages * kPage), pages);
        return bytes;
    }

    static constexpr std::size_t kPages = 8;
    TemporaryDirectory directory_;
    std::string path_;
    int fd_ = -1;
};

TEST_F(MappedFilePages, DropsAWholeFileMappingWhoseContentsComeBackFromTheFile) {
    char* bytes = map_and_read(kPages);
    drop_whole_file_mappings({path_});
    EXPECT_EQ(present_pages(bytes, kPages * kPage), 0u);
    EXPECT_EQ(bytes[3 * kPage + 5], 'x');
    ::munmap(bytes, kPages * kPage);
}

TEST_F(MappedFilePages, LeavesAMappingOfPartOfTheFile) {
    char* bytes = map_and_read(kPages / 2);
    drop_whole_file_mappings({path_});
    EXPECT_EQ(present_pages(bytes, kPages / 2 * kPage), kPages / 2);
    ::munmap(bytes, kPages / 2 * kPage);
}

TEST_F(MappedFilePages, LeavesAMappingWithAPageWrittenToAndItsContents) {
    char* bytes = map_and_read(kPages);
    bytes[2 * kPage] = 'y';  // a private copy, which dropping would lose
    drop_whole_file_mappings({path_});
    EXPECT_EQ(present_pages(bytes, kPages * kPage), kPages);
    EXPECT_EQ(bytes[2 * kPage], 'y');
    ::munmap(bytes, kPages * kPage);
}

TEST_F(MappedFilePages, LeavesMappingsOfOtherFiles) {
    char* bytes = map_and_read(kPages);
    drop_whole_file_mappings({"/nonexistent/file", "/proc/self/exe"});
    EXPECT_EQ(present_pages(bytes, kPages * kPage), kPages);
    ::munmap(bytes, kPages * kPage);
}

}  // namespace
}  // namespace leakwrap
