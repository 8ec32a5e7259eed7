#include "segment_file.h"

#include "segment_parser.h"

#include <leakwrap/segment_layout.h>

#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

namespace leakwrap {
namespace {

namespace layout = leakwrap::layout;

// Far above any segment the writer can create (64M sites with their stack table is 10.5 GiB,
// sparse); a file larger than this is not a segment. Only the used parts are copied.
constexpr uint64_t kMaxSegmentBytes = uint64_t{32} << 30;

constexpr auto kReadyPollInterval = std::chrono::milliseconds(10);

std::string quoted(const std::filesystem::path& path) { return path.string(); }

[[noreturn]] void fail_errno(const std::string& what, const std::filesystem::path& path) {
    const int error = errno;
    throw SegmentFileError("cannot " + what + " " + quoted(path) + ": " + std::strerror(error), error);
}

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& reason) {
    throw SegmentFileError(quoted(path) + " " + reason + "; refusing", 0);
}

class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() { ::close(fd_); }
    int get() const { return fd_; }

private:
    int fd_;
};

class ReadOnlyMapping {
public:
    ReadOnlyMapping(int fd, size_t size, const std::filesystem::path& path) : size_(size) {
        void* address = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (address == MAP_FAILED) fail_errno("map", path);
        data_ = static_cast<const std::byte*>(address);
    }
    ReadOnlyMapping(const ReadOnlyMapping&) = delete;
    ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
    ~ReadOnlyMapping() { ::munmap(const_cast<std::byte*>(data_), size_); }
    const std::byte* data() const { return data_; }

private:
    const std::byte* data_ = nullptr;
    size_t size_;
};

std::optional<std::string> user_name(uid_t uid) {
    struct passwd entry {};
    struct passwd* found = nullptr;
    char buffer[4096];
    if (::getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) != 0 || found == nullptr) return std::nullopt;
    return found->pw_name;
}

// "alice (uid 1000)", or "uid 1000" for a user without a name.
std::string user_description(uid_t uid) {
    const std::string id = "uid " + std::to_string(uid);
    const auto name = user_name(uid);
    return name ? *name + " (" + id + ")" : id;
}

// What to do about a segment of another user: read it as that user. Root is no way around it,
// since the reader trusts no segment but its own user's.
std::string read_as_owner_advice(uid_t owner) {
    return "run leakwrap-report as that user (sudo -u " + user_name(owner).value_or("#" + std::to_string(owner)) +
           " leakwrap-report ...)";
}

FileDescriptor open_segment(const std::filesystem::path& path) {
    // O_NONBLOCK so that a FIFO planted under a segment name cannot make open() wait forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int error = errno;
        if (error == ELOOP) throw SegmentFileError(quoted(path) + " is a symbolic link; refusing", ELOOP);
        struct stat status {};
        if (error == EACCES && ::lstat(path.c_str(), &status) == 0 && status.st_uid != ::geteuid())
            throw SegmentFileError("cannot open " + quoted(path) + ": it belongs to " +
                                       user_description(status.st_uid) + "; " + read_as_owner_advice(status.st_uid),
                                   EACCES);
        errno = error;
        fail_errno("open", path);
    }
    return FileDescriptor(fd);
}

struct stat status_of(const FileDescriptor& fd, const std::filesystem::path& path) {
    struct stat status {};
    if (::fstat(fd.get(), &status) != 0) fail_errno("stat", path);
    return status;
}

// A segment steers what the reader opens (module paths) and prints, so only a file that
// nobody but this user could have written is trusted - root included.
void require_trustworthy(const struct stat& status, const std::filesystem::path& path) {
    if (!S_ISREG(status.st_mode)) refuse(path, "is not a regular file");
    const uid_t me = ::geteuid();
    if (status.st_uid != me)
        throw SegmentFileError(quoted(path) + " belongs to " + user_description(status.st_uid) + ", not to you, " +
                                   user_description(me) + ": only your own segments are trusted; " +
                                   read_as_owner_advice(status.st_uid),
                               0);
    if (status.st_mode & (S_IWGRP | S_IWOTH)) {
        std::ostringstream mode;
        mode << std::oct << (status.st_mode & 07777);
        refuse(path, "is group/world-writable (mode 0" + mode.str() + ")");
    }
}

thread_local sigjmp_buf* sigbus_escape = nullptr;

void on_sigbus(int) {
    if (sigbus_escape != nullptr) {
        sigjmp_buf* escape = sigbus_escape;
        sigbus_escape = nullptr;
        siglongjmp(*escape, 1);
    }
    // Not a fault of our copy: let the re-executed access die the default way.
    ::signal(SIGBUS, SIG_DFL);
}

class SigbusHandlerScope {
public:
    SigbusHandlerScope() {
        struct sigaction action {};
        action.sa_handler = on_sigbus;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &previous_);
    }
    SigbusHandlerScope(const SigbusHandlerScope&) = delete;
    SigbusHandlerScope& operator=(const SigbusHandlerScope&) = delete;
    ~SigbusHandlerScope() { ::sigaction(SIGBUS, &previous_, nullptr); }

private:
    struct sigaction previous_ {};
};

// Front to back, one acquire load per word: the writer fills a record and then publishes it by
// storing kReady into its state word, which precedes the record's variable parts (depth, frames),
// so a record whose state is copied as ready has the rest copied complete.
void copy_in_publication_order(std::byte* destination, const std::byte* source, size_t size) {
    const auto* words = reinterpret_cast<const uint64_t*>(source);  // mmap is page-aligned
    const size_t whole_words = size / sizeof(uint64_t);
    for (size_t i = 0; i < whole_words; ++i) {
        const uint64_t word = __atomic_load_n(words + i, __ATOMIC_ACQUIRE);
        std::memcpy(destination + i * sizeof(uint64_t), &word, sizeof(word));
    }
    for (size_t i = whole_words * sizeof(uint64_t); i < size; ++i)
        destination[i] = std::byte{__atomic_load_n(reinterpret_cast<const uint8_t*>(source) + i, __ATOMIC_ACQUIRE)};
}

uint64_t page_size() {
    static const uint64_t size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return size;
}

// The pages of the mapping that hold [from, to) leave this process's resident set: read through
// the shared mapping, each page would count once there and once in the copy, doubling the
// reader's peak for a moment. The file keeps its data, so a page shared with the next range is
// only mapped again when that range reads it.
void drop_mapped_pages(const std::byte* source, uint64_t from, uint64_t to) {
    const uint64_t page = page_size();
    const uint64_t first = from / page * page;
    const uint64_t end = (to + page - 1) / page * page;  // within the mapping, which mmap rounds up
    ::madvise(const_cast<std::byte*>(source) + first, end - first, MADV_DONTNEED);
}

// How much of the mapping is read before it is dropped, and how many bytes of site records the
// parser is handed at a time: the pages of both count in the reader's peak, 2 MiB at a megabyte;
// a madvise() call per chunk costs nothing to speak of.
constexpr uint64_t kChunkBytes = uint64_t{256} << 10;

// [from, to) of the mapping into `destination`, which stands for `from`, a chunk at a time, each
// dropped from the mapping once copied.
void copy_and_drop(std::byte* destination, const std::byte* source, uint64_t from, uint64_t to) {
    for (uint64_t at = from; at < to; at += kChunkBytes) {
        const uint64_t chunk_end = std::min(to, at + kChunkBytes);
        copy_in_publication_order(destination + (at - from), source + at, chunk_end - at);
        drop_mapped_pages(source, at, chunk_end);
    }
}

// The writer hands out a slot or a string before it backs its page, and backing fails once
// /dev/shm is full, so a claimed range can end in a hole. Reading a hole through the shared
// mapping makes tmpfs allocate a page, which raises SIGBUS when there is none left. Holes read as
// zero, which `destination` (standing for `offset`) already is, so only the file's data is
// copied; a page the writer fills after this look holds nothing published before it, like a page
// copied earlier. A file system that cannot tell says the whole file is data.
void copy_data_in_range(int fd, std::byte* destination, const std::byte* source, uint64_t offset, uint64_t end) {
    const uint64_t start = offset;
    while (offset < end) {
        const off_t data = ::lseek(fd, static_cast<off_t>(offset), SEEK_DATA);
        if (data < 0 && errno == ENXIO) return;  // only holes up to the end of the file
        const uint64_t from = data < 0 ? offset : static_cast<uint64_t>(data);
        if (from >= end) return;
        const off_t hole = data < 0 ? -1 : ::lseek(fd, data, SEEK_HOLE);
        const uint64_t to = hole < 0 ? end : std::min(static_cast<uint64_t>(hole), end);
        copy_and_drop(destination + (from - start), source, from, to);
        offset = to;
    }
}

// Zero-filled private memory the size of the segment: the parts left uncopied read as zero
// (never-written slots, and the site table, which is read from the file: SiteRecordSource) and
// cost nothing.
class PrivateCopy {
public:
    PrivateCopy(uint64_t size, const std::filesystem::path& path) : size_(size) {
        if (size == 0) return;
        void* address =
            ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (address == MAP_FAILED) fail_errno("allocate memory for", path);
        data_ = static_cast<std::byte*>(address);
    }
    PrivateCopy(const PrivateCopy&) = delete;
    PrivateCopy& operator=(const PrivateCopy&) = delete;
    ~PrivateCopy() {
        if (data_ != nullptr) ::munmap(data_, size_);
    }
    std::byte* data() { return data_; }
    std::span<const std::byte> bytes() const { return {data_, size_}; }

    // Frees the whole pages within `part` (of bytes()); they read as zero after.
    void release(std::span<const std::byte> part) {
        const uint64_t page = page_size();
        const uint64_t from = static_cast<uint64_t>(part.data() - data_);
        const uint64_t first = (from + page - 1) / page * page;
        const uint64_t end = (from + part.size()) / page * page;
        if (first < end) ::madvise(data_ + first, end - first, MADV_DONTNEED);
    }

private:
    std::byte* data_ = nullptr;
    uint64_t size_;
};

// A segment file read while its writer may still run, in the order the writer publishes (layout
// rules R5-R7): the header, then the site records (read by the parser where they lie, twice),
// then what the sites name or what counts after them. Only what the writer has handed out is
// read: the rest of the segment is a sparse tmpfs file, and reading its holes through a shared
// mapping would allocate them, inflating the segment to its full size in /dev/shm.
class SegmentReading {
public:
    SegmentReading(int fd, const std::filesystem::path& path, PrivateCopy& copy)
        : fd_(fd), path_(path), copy_(copy), size_(copy.bytes().size()), mapping_(fd, size_, path) {}

    // The header's state word is its last field and is published last, so it is loaded first:
    // a header copied as ready is then a complete one. A file too small for a header is copied
    // whole, for the parser to say so.
    void copy_header() {
        surviving_truncation([&] {
            if (size_ < sizeof(layout::Header)) {
                copy_in_publication_order(copy_.data(), source(), size_);
                return;
            }
            const uint32_t state =
                __atomic_load_n(reinterpret_cast<const uint32_t*>(source() + kStateOffset), __ATOMIC_ACQUIRE);
            copy_in_publication_order(copy_.data(), source(), sizeof(layout::Header));
            std::memcpy(copy_.data() + kStateOffset, &state, sizeof(state));
        });
    }

    // SiteRecordSource::read: a chunk of whole records at a time, copied into one buffer.
    void read_site_records(uint64_t offset, uint64_t record_size, uint32_t count,
                           const SiteRecordSource::Visit& visit) {
        std::vector<std::byte> chunk;
        for_each_record_chunk(count, record_size, kChunkBytes, [&](uint32_t first, uint32_t slots) {
            const uint64_t bytes = slots * record_size;
            if (chunk.size() < bytes) chunk.resize(bytes);
            std::fill(chunk.begin(), chunk.end(), std::byte{0});
            surviving_truncation([&] { copy_range(chunk.data(), offset + first * record_size, bytes); });
            visit(first, std::span<const std::byte>(chunk.data(), bytes));
        });
    }

    // SiteRecordSource::after_names.
    void copy_after_names() {
        const layout::Header header = copied_header();
        surviving_truncation([&] {
            // After the sites (rule R5: a site is published after its stack): every stack a site
            // read names was ready before stacks_used is loaded here.
            const uint64_t stacks_used = __atomic_load_n(
                reinterpret_cast<const uint64_t*>(source() + offsetof(layout::Header, stacks_used)), __ATOMIC_ACQUIRE);
            copy_in_place(header.stacks_offset, std::min(stacks_used, header.stacks_capacity));
            copy_in_place(header.modules_offset, uint64_t{std::min(header.modules_claimed, header.module_capacity)} *
                                                     header.module_record_size);
            // A string is handed out (strings_used) before it is written, and written before the
            // record naming it is published; so strings_used loaded after the records covers all
            // they name.
            const uint32_t strings_used = __atomic_load_n(
                reinterpret_cast<const uint32_t*>(source() + offsetof(layout::Header, strings_used)), __ATOMIC_ACQUIRE);
            copy_in_place(header.strings_offset, std::min(strings_used, header.strings_capacity));
            mark_deltas(header, deltas_before_sites_);
        });
    }

    // SiteRecordSource::deltas_before_sites.
    const std::vector<DeltaMark>& deltas_before_sites() const { return deltas_before_sites_; }

    // SiteRecordSource::after_sites.
    void copy_after_sites() {
        const layout::Header header = copied_header();
        surviving_truncation([&] {
            // After the sites: a thread moves a delta entry's counts into the site record after
            // marking the entry empty, so reading the entries after the records may miss counts
            // in transit but never counts them twice. Only the shards the writer backed are read
            // (R6); a corrupt size is clamped to the file like every range.
            const uint64_t shard_deltas = uint64_t{header.site_delta_slots} * sizeof(layout::SiteDelta);
            for_each_readable_shard(header, bin_shards_backed(header), [&](uint32_t shard) {
                copy_in_place(header.site_deltas_offset + shard * shard_deltas, shard_deltas);
            });
            copy_late_records(header);
            copy_allocator_statistics(header);
            // After the sites and their deltas: the writer counts a block in its bin before its
            // site (or the site's delta entry), so the exact totals read now cover every block the
            // site counters read show.
            for_each_readable_shard(header, bin_shards_backed(header), [&](uint32_t shard) {
                copy_in_place(header.bins_offset + layout::bin_index(0, shard) * sizeof(layout::BinCounters),
                              uint64_t{layout::kSizeClassCount} * sizeof(layout::BinCounters));
            });
        });
    }

    // SiteRecordSource::recount: every place the sites count in (their records, and the delta
    // entry of their slot in each shard) loaded frees first, allocations after (R12), with the
    // entries' marks around them: one that moved meanwhile may have moved counts into a record
    // already loaded (R10), and leaves the sites in transit.
    std::optional<std::vector<Counters>> recount(std::span<const uint32_t> slots) {
        const layout::Header header = copied_header();
        const auto word = [&](uint64_t offset) {
            return offset + sizeof(uint64_t) <= size_
                       ? __atomic_load_n(reinterpret_cast<const uint64_t*>(source() + offset), __ATOMIC_ACQUIRE)
                       : 0;
        };
        const auto record = [&](std::size_t i) {
            return header.sites_offset + uint64_t{slots[i]} * header.site_record_size;
        };
        struct Entry {
            std::size_t site;  // index in `slots`
            uint64_t offset;
            DeltaMark before;
        };
        std::vector<Entry> entries;
        const uint32_t backed = bin_shards_backed(header);
        for (std::size_t i = 0; i < slots.size() && header.site_delta_slots != 0; ++i)
            for_each_readable_shard(header, backed, [&](uint32_t shard) {
                const uint64_t entry =
                    uint64_t{shard} * header.site_delta_slots + (slots[i] & (header.site_delta_slots - 1));
                entries.push_back({i, header.site_deltas_offset + entry * sizeof(layout::SiteDelta), {}});
            });
        std::vector<Counters> counts(slots.size());
        bool moved = false;
        surviving_truncation([&] {
            for (std::size_t i = 0; i < slots.size(); ++i)
                counts[i] += {0, word(record(i) + offsetof(layout::SiteRecord, frees)), 0,
                              word(record(i) + offsetof(layout::SiteRecord, free_bytes))};
            for (Entry& entry : entries) {
                entry.before = delta_mark(entry.offset);
                if (entry.before.site == slots[entry.site])
                    counts[entry.site] += {0, word(entry.offset + offsetof(layout::SiteDelta, frees)), 0,
                                           word(entry.offset + offsetof(layout::SiteDelta, free_bytes))};
            }
            for (std::size_t i = 0; i < slots.size(); ++i)
                counts[i] += {word(record(i) + offsetof(layout::SiteRecord, allocs)), 0,
                              word(record(i) + offsetof(layout::SiteRecord, alloc_bytes)), 0};
            for (const Entry& entry : entries)
                if (entry.before.site == slots[entry.site])
                    counts[entry.site] += {word(entry.offset + offsetof(layout::SiteDelta, allocs)), 0,
                                           word(entry.offset + offsetof(layout::SiteDelta, alloc_bytes)), 0};
            for (const Entry& entry : entries) {
                const DeltaMark after = delta_mark(entry.offset);
                moved = moved || after.site != entry.before.site || after.moves != entry.before.moves;
            }
        });
        if (moved) return std::nullopt;
        return counts;
    }

    // SiteRecordSource::late_records and deltas_after_late_records.
    std::span<const std::byte> late_records() const { return late_records_; }
    const std::vector<DeltaMark>& deltas_after_late_records() const { return deltas_after_late_records_; }

private:
    static constexpr size_t kStateOffset = offsetof(layout::Header, state);

    // The records claimed since the header was copied, read after the delta entries (an entry
    // names a site only once it is claimed, so every entry copied names a site read by then),
    // and each entry's site and moves once more: an entry that moved in between may have moved
    // its counts into a late record, and the parser then leaves its copy out (R10). Those
    // beyond kMostLateRecords are left for the next read, as every record claimed later is, so
    // that a writer's burst cannot make the reader copy its whole table.
    static constexpr uint32_t kMostLateRecords = 4096;
    void copy_late_records(const layout::Header& header) {
        const uint32_t first = std::min(header.sites_claimed, header.site_capacity);
        const uint32_t claimed = __atomic_load_n(
            reinterpret_cast<const uint32_t*>(source() + offsetof(layout::Header, sites_claimed)), __ATOMIC_ACQUIRE);
        const uint32_t late = std::min({claimed, header.site_capacity, first + kMostLateRecords});
        if (late > first) {
            late_records_.assign(uint64_t{late - first} * header.site_record_size, std::byte{0});
            copy_range(late_records_.data(), header.sites_offset + uint64_t{first} * header.site_record_size,
                       late_records_.size());
        }
        mark_deltas(header, deltas_after_late_records_);
    }

    // A copy taken between two equal, even loads of their sequence word (R11); after a few tries
    // that all caught the writer rewriting them, the copy keeps an odd word, which says so.
    void copy_allocator_statistics(const layout::Header& header) {
        const uint64_t offset = header.allocator_stats_offset;
        if (header.layout_version < 9 || offset == 0 || offset % alignof(layout::AllocatorStatistics) != 0 ||
            offset > size_ || size_ - offset < sizeof(layout::AllocatorStatistics))
            return;  // the parser says what is wrong with the offset
        const auto* sequence = reinterpret_cast<const uint32_t*>(source() + offset);
        uint32_t before = 1;
        for (int attempt = 0; attempt < kStatisticsAttempts; ++attempt) {
            before = __atomic_load_n(sequence, __ATOMIC_ACQUIRE);
            copy_in_place(offset, sizeof(layout::AllocatorStatistics));
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (before % 2 == 0 && __atomic_load_n(sequence, __ATOMIC_RELAXED) == before) break;
            before = 1;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        std::memcpy(copy_.data() + offset, &before, sizeof before);
    }
    static constexpr int kStatisticsAttempts = 5;

    // Each entry's site and moves, loaded as the writer stores them (R10), in the shards the
    // writer backed (R6); an entry of the others, never used, marks nothing. A corrupt table size
    // is clamped to the file.
    void mark_deltas(const layout::Header& header, std::vector<DeltaMark>& marks) {
        const uint64_t offset = header.site_deltas_offset;
        if (offset >= size_) return;
        const uint64_t entries = std::min<uint64_t>(uint64_t{header.bin_shards} * header.site_delta_slots,
                                                    (size_ - offset) / sizeof(layout::SiteDelta));
        marks.assign(entries, DeltaMark{});
        for_each_readable_shard(header, bin_shards_backed(header), [&](uint32_t shard) {
            const uint64_t first = uint64_t{shard} * header.site_delta_slots;
            for (uint64_t entry = first; entry < first + header.site_delta_slots && entry < entries; ++entry)
                marks[entry] = delta_mark(offset + entry * sizeof(layout::SiteDelta));
        });
    }

    // Header::bin_shards_backed as the writer last stored it (it grows as threads claim shards);
    // every shard in layouts before 13.
    uint32_t bin_shards_backed(const layout::Header& header) const {
        if (header.layout_version < 13) return header.bin_shards;
        if (size_ < sizeof(layout::Header)) return 0;
        return __atomic_load_n(
            reinterpret_cast<const uint32_t*>(source() + offsetof(layout::Header, bin_shards_backed)),
            __ATOMIC_ACQUIRE);
    }

    // The site and moves of the delta entry at `offset`, loaded as the writer stores them (R10);
    // an entry beyond the file names none.
    DeltaMark delta_mark(uint64_t offset) const {
        if (offset > size_ || size_ - offset < sizeof(layout::SiteDelta)) return {layout::kNoDeltaSite, 0};
        const std::byte* delta = source() + offset;
        return {__atomic_load_n(reinterpret_cast<const uint32_t*>(delta + offsetof(layout::SiteDelta, site)),
                                __ATOMIC_ACQUIRE),
                __atomic_load_n(reinterpret_cast<const uint32_t*>(delta + offsetof(layout::SiteDelta, moves)),
                                __ATOMIC_ACQUIRE)};
    }

    const std::byte* source() const { return mapping_.data(); }
    layout::Header copied_header() const {
        layout::Header header;
        std::memcpy(&header, copy_.bytes().data(), sizeof(header));
        return header;
    }

    // A corrupt header must not steer the copy outside the mapping.
    void copy_range(std::byte* destination, uint64_t offset, uint64_t length) {
        if (offset >= size_) return;
        length = std::min(length, size_ - offset);
        copy_data_in_range(fd_, destination, source(), offset, offset + length);
    }
    void copy_in_place(uint64_t offset, uint64_t length) {
        if (offset < size_) copy_range(copy_.data() + offset, offset, length);
    }

    // A concurrent truncate turns reads past the new end into SIGBUS; caught instead of dying.
    // `copy` only copies: nothing it does needs undoing when the signal jumps out of it.
    template <class Copy>
    void surviving_truncation(const Copy& copy) {
        sigjmp_buf escape;
        if (sigsetjmp(escape, 1) != 0)
            throw SegmentFileError(quoted(path_) + " shrank while it was being read", EFAULT);
        sigbus_escape = &escape;
        copy();
        sigbus_escape = nullptr;
    }

    int fd_;
    const std::filesystem::path& path_;
    PrivateCopy& copy_;
    uint64_t size_;
    ReadOnlyMapping mapping_;
    std::vector<DeltaMark> deltas_before_sites_;
    std::vector<std::byte> late_records_;
    std::vector<DeltaMark> deltas_after_late_records_;
};

uint64_t file_size(const FileDescriptor& fd, const std::filesystem::path& path) {
    const auto size = static_cast<uint64_t>(status_of(fd, path).st_size);
    if (size > kMaxSegmentBytes) refuse(path, "is " + std::to_string(size) + " bytes, too large for a segment");
    return size;
}

// The writer creates the file empty, sizes it, fills the header and sets its state last.
bool writer_still_initializing(std::span<const std::byte> bytes) {
    if (bytes.empty()) return true;
    if (bytes.size() < sizeof(layout::Header)) return false;
    layout::Header header;
    std::memcpy(&header, bytes.data(), sizeof(header));
    static constexpr char kNoMagic[sizeof(layout::kMagic)] = {};
    const bool magic_written = std::memcmp(header.magic, layout::kMagic, sizeof(header.magic)) == 0;
    const bool magic_unwritten = std::memcmp(header.magic, kNoMagic, sizeof(header.magic)) == 0;
    return (magic_written || magic_unwritten) && header.state == layout::kEmpty;
}

}  // namespace

Snapshot read_segment_file(const std::filesystem::path& path, const ReadOptions& options) {
    const FileDescriptor fd = open_segment(path);
    require_trustworthy(status_of(fd, path), path);
    const SigbusHandlerScope handler;

    const auto deadline = std::chrono::steady_clock::now() + options.ready_timeout;
    for (;;) {
        PrivateCopy copy(file_size(fd, path), path);
        const auto release = [&](std::span<const std::byte> part) { copy.release(part); };
        if (copy.bytes().empty()) {
            if (std::chrono::steady_clock::now() >= deadline) return parse_segment(copy.bytes());
            std::this_thread::sleep_for(kReadyPollInterval);
            continue;
        }
        SegmentReading reading(fd.get(), path, copy);
        reading.copy_header();
        if (writer_still_initializing(copy.bytes()) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(kReadyPollInterval);
            continue;
        }
        const SiteRecordSource streamed{
            [&](uint64_t offset, uint64_t record_size, uint32_t count, const SiteRecordSource::Visit& visit) {
                reading.read_site_records(offset, record_size, count, visit);
            },
            [&] { reading.copy_after_names(); },
            [&] { reading.copy_after_sites(); },
            [&]() -> const std::vector<DeltaMark>& { return reading.deltas_before_sites(); },
            [&] { return reading.late_records(); },
            [&]() -> const std::vector<DeltaMark>& { return reading.deltas_after_late_records(); },
            [&](std::span<const uint32_t> slots) { return reading.recount(slots); }};
        return parse_segment(copy.bytes(), release, &streamed);
    }
}

}  // namespace leakwrap
