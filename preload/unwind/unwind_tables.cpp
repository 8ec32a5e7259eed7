#include "unwind_tables.h"

#include <elf.h>
#include <link.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "loaded_module.h"
#include "eh_frame.h"
#include "fork_fence.h"
#include "frame_sizes.h"
#include "os.h"
#include "private_memory.h"

namespace leakwrap {

// What one module's file was found to hold (see unwind_tables.h). Written whole by the thread
// that claimed the slot, then published by `ready` (release); never changed after.
struct ModuleUnwindTable {
    struct Load {
        uint64_t address;  // p_vaddr
        uint64_t offset;   // p_offset
        uint64_t size;     // p_filesz
    };
    static constexpr unsigned kMaxLoads = 8;

    std::atomic<uint32_t> ready;
    os::FileIdentity file;
    uintptr_t bias;
    uint64_t hdr;  // link-time address of .eh_frame_hdr; 0 when the file's table is not read
    uint32_t fde_count;
    uint32_t load_count;
    Load loads[kMaxLoads];
    // The initial location (relative to hdr) of table entries 0, kSampleStride, 2 kSampleStride…
    const int32_t* samples;
};

namespace {

// .eh_frame_hdr's encodings of its one layout read here: version 1, then the encodings of
// eh_frame_ptr (any 4-byte one), of fde_count (udata4) and of the table (datarel sdata4), then
// eh_frame_ptr, fde_count and the sorted table of (initial location, FDE address) pairs.
constexpr uint8_t kHdrVersion = 1;
constexpr uint8_t kUdata4 = 0x03;
constexpr uint8_t kSdata4 = 0x0b;
constexpr uint8_t kDataRelativeSdata4 = 0x3b;
constexpr uint64_t kHdrTableOffset = 12;
constexpr uint64_t kTableEntryBytes = 8;

// Table entries read at once when looking a frame up: one read of 512 bytes.
constexpr uint32_t kSampleStride = 64;

// Entries are never reused: a process that loads more distinct modules than this leaves the
// frames of the later ones to libunwind. Both reservations are touched as they fill.
constexpr uint32_t kMaxModules = 2048;
constexpr uint64_t kMaxSamples = uint64_t{1} << 20;  // tables of 64M FDEs in all

constinit ModuleUnwindTable* g_modules = nullptr;
constinit std::atomic<uint32_t> g_modules_claimed{0};
constinit std::atomic<uint64_t> g_modules_counted{0};
constinit int32_t* g_samples = nullptr;
constinit std::atomic<uint64_t> g_samples_claimed{0};
constinit std::atomic<uint64_t> g_samples_counted{0};

// Notes read from the file to compare build-ids: a module's notes (build-id, ABI tag, GNU
// properties) take some hundred bytes.
constexpr std::size_t kMaxNotesRead = 512;
constexpr uint32_t kMaxBuildId = 64;

bool same_file(const os::FileIdentity& a, const os::FileIdentity& b) {
    return a.device == b.device && a.inode == b.inode && a.modified.tv_sec == b.modified.tv_sec &&
           a.modified.tv_nsec == b.modified.tv_nsec;
}

bool contains(const dl_phdr_info* info, uintptr_t address) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD && address - (info->dlpi_addr + ph.p_vaddr) < ph.p_memsz) return true;
    }
    return false;
}

uint32_t file_build_id(int fd, const ElfW(Phdr) & note_segment, uint8_t* out) {
    unsigned char notes[kMaxNotesRead];
    const std::size_t wanted = note_segment.p_filesz < sizeof notes ? note_segment.p_filesz : sizeof notes;
    const std::size_t got = os::read_at(fd, note_segment.p_offset, notes, wanted);
    return build_id_in_notes(notes, got, out, kMaxBuildId);
}

// The file holds the image mapped: the same program headers, and the same build-id if the
// module has one.
bool is_mapped_file(int fd, const dl_phdr_info* info) {
    ElfW(Ehdr) header;
    if (os::read_at(fd, 0, &header, sizeof header) != sizeof header ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_phentsize != sizeof(ElfW(Phdr)) ||
        header.e_phnum != info->dlpi_phnum)
        return false;
    uint8_t in_memory[kMaxBuildId];
    const uint32_t memory_length = build_id_of_loaded(info, in_memory, sizeof in_memory);
    bool build_id_matched = memory_length == 0;
    ElfW(Phdr) headers[8];
    for (int first = 0; first < info->dlpi_phnum; first += 8) {
        const int count = info->dlpi_phnum - first < 8 ? info->dlpi_phnum - first : 8;
        const std::size_t bytes = count * sizeof(ElfW(Phdr));
        if (os::read_at(fd, header.e_phoff + first * sizeof(ElfW(Phdr)), headers, bytes) != bytes ||
            std::memcmp(headers, &info->dlpi_phdr[first], bytes) != 0)
            return false;
        for (int i = 0; i < count && !build_id_matched; ++i) {
            if (headers[i].p_type != PT_NOTE) continue;
            uint8_t in_file[kMaxBuildId];
            build_id_matched = file_build_id(fd, headers[i], in_file) == memory_length &&
                               std::memcmp(in_file, in_memory, memory_length) == 0;
        }
    }
    return build_id_matched;
}

std::size_t read_file_at(int fd, const ModuleUnwindTable& table, uint64_t address, void* out, std::size_t size) {
    for (uint32_t i = 0; i < table.load_count; ++i) {
        const ModuleUnwindTable::Load& load = table.loads[i];
        if (address - load.address >= load.size) continue;
        const uint64_t left = load.size - (address - load.address);
        return os::read_at(fd, load.offset + (address - load.address), out, size < left ? size : left);
    }
    return 0;
}

// Reads the table's header and samples; leaves hdr 0 if the table is not one read here.
void read_table(int fd, uint64_t hdr, ModuleUnwindTable* table) {
    uint8_t head[kHdrTableOffset];
    if (read_file_at(fd, *table, hdr, head, sizeof head) != sizeof head || head[0] != kHdrVersion ||
        ((head[1] & 0x0f) != kUdata4 && (head[1] & 0x0f) != kSdata4) || head[2] != kUdata4 ||
        head[3] != kDataRelativeSdata4)
        return;
    uint32_t fde_count;
    std::memcpy(&fde_count, head + 8, sizeof fde_count);
    if (fde_count == 0) return;
    const uint64_t sample_count = (uint64_t{fde_count} + kSampleStride - 1) / kSampleStride;
    const uint64_t first = g_samples_claimed.fetch_add(sample_count, std::memory_order_relaxed);
    if (sample_count > kMaxSamples || first > kMaxSamples - sample_count) return;
    int32_t* samples = g_samples + first;
    for (uint64_t k = 0; k < sample_count; ++k) {
        const uint64_t entry = hdr + kHdrTableOffset + k * kSampleStride * kTableEntryBytes;
        if (read_file_at(fd, *table, entry, &samples[k], sizeof samples[k]) != sizeof samples[k]) return;
    }
    count_private_use(g_samples_counted, (first + sample_count) * sizeof(int32_t));
    table->fde_count = fde_count;
    table->samples = samples;
    table->hdr = hdr;
}

const ModuleUnwindTable* find_table(const os::FileIdentity& file, uintptr_t bias) {
    const uint32_t claimed = g_modules_claimed.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < claimed && i < kMaxModules; ++i) {
        const ModuleUnwindTable& table = g_modules[i];
        if (table.ready.load(std::memory_order_acquire) != 0 && table.bias == bias && same_file(table.file, file))
            return &table;
    }
    return nullptr;
}

// A new entry for the module `info`, whose file is open as fd; null when the table of modules
// is full. Two threads may add the same module at once: both entries are right.
const ModuleUnwindTable* add_table(int fd, const os::FileIdentity& file, const dl_phdr_info* info) {
    const uint32_t slot = g_modules_claimed.fetch_add(1, std::memory_order_relaxed);
    if (slot >= kMaxModules) return nullptr;
    count_private_use(g_modules_counted, uint64_t{slot + 1} * sizeof(ModuleUnwindTable));
    ModuleUnwindTable* table = &g_modules[slot];
    table->file = file;
    table->bias = info->dlpi_addr;
    uint64_t hdr = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_GNU_EH_FRAME) hdr = ph.p_vaddr;
        if (ph.p_type == PT_LOAD && table->load_count < ModuleUnwindTable::kMaxLoads)
            table->loads[table->load_count++] = {ph.p_vaddr, ph.p_offset, ph.p_filesz};
    }
    if (hdr != 0 && is_mapped_file(fd, info)) read_table(fd, hdr, table);
    table->ready.store(1, std::memory_order_release);
    return table;
}

bool is_transient(int error) {
    return error == EMFILE || error == ENFILE || error == ENOMEM || error == EINTR || error == EAGAIN;
}

// What find_module() copies of the module that holds `address`, so that its file is opened and
// read after dl_iterate_phdr() returned. Its callback runs holding the loader's
// dl_load_write_lock, which glibc does not reset in a forked child: a fork while another thread
// held it for a file's reads would leave the child's next dl_iterate_phdr() (ours, or an
// exception's unwinding) waiting forever. The module cannot go away meanwhile: the walk stands in
// one of its frames.
constexpr int kMaxCopiedHeaders = 24;
constexpr std::size_t kMaxCopiedPath = 512;

struct ModuleSearch {
    uintptr_t address = 0;
    bool found = false;
    bool readable = false;  // a file, with a path and program headers that fit the copies below
    uintptr_t start = 0, end = 0;
    dl_phdr_info copy{};  // pointing at the copies below
    ElfW(Phdr) headers[kMaxCopiedHeaders];
    char path[kMaxCopiedPath];
};

// dl_iterate_phdr's visitor: copies the module that holds search->address.
int find_module(dl_phdr_info* info, size_t, void* context) {
    auto* search = static_cast<ModuleSearch*>(context);
    if (!contains(info, search->address)) return 0;
    search->found = true;
    address_range_of_loaded(info, &search->start, &search->end);
    // The main program has no name here; the vDSO has no file.
    const char* name = info->dlpi_name;
    const char* path = name == nullptr || name[0] == '\0' ? "/proc/self/exe" : name;
    const std::size_t path_length = strnlen(path, kMaxCopiedPath);
    if (path[0] != '/' || path_length == kMaxCopiedPath || info->dlpi_phnum > kMaxCopiedHeaders) return 1;
    std::memcpy(search->path, path, path_length + 1);
    std::memcpy(search->headers, info->dlpi_phdr, sizeof(ElfW(Phdr)) * info->dlpi_phnum);
    search->copy.dlpi_addr = info->dlpi_addr;
    search->copy.dlpi_name = search->path;
    search->copy.dlpi_phdr = search->headers;
    search->copy.dlpi_phnum = info->dlpi_phnum;
    search->readable = true;
    return 1;
}

std::size_t read_module_bytes(const void* context, uint64_t address, void* out, std::size_t size) {
    return static_cast<const UnwindTableReader*>(context)->read(address, out, size);
}

}  // namespace

bool init_unwind_tables() {
    if (g_modules != nullptr) return true;
    g_modules = static_cast<ModuleUnwindTable*>(os::reserve_private(sizeof(ModuleUnwindTable) * kMaxModules));
    g_samples = static_cast<int32_t*>(os::reserve_private(sizeof(int32_t) * kMaxSamples));
    if (g_modules == nullptr || g_samples == nullptr) g_modules = nullptr;
    return g_modules != nullptr;
}

UnwindTableReader::~UnwindTableReader() { close_module(); }

void UnwindTableReader::close_module() {
    if (fd_ >= 0) os::close_file(fd_);
    if (fenced_) leave_fork_fenced_section();
    fenced_ = false;
    fd_ = -1;
    start_ = end_ = 0;
    table_ = nullptr;
    transient_failure_ = false;
}

std::size_t UnwindTableReader::read(uint64_t address, void* out, std::size_t size) const {
    return table_ == nullptr ? 0 : read_file_at(fd_, *table_, address, out, size);
}

bool UnwindTableReader::open_module_of(uintptr_t address) {
    close_module();
    fenced_ = enter_fork_fenced_section();
    if (!fenced_) return false;
    ModuleSearch search;
    search.address = address;
    dl_iterate_phdr(find_module, &search);
    if (!search.found) return true;
    start_ = search.start;
    end_ = search.end;
    if (!search.readable || g_modules == nullptr) return true;
    os::FileIdentity file{};
    const int fd = os::open_regular_file(search.path, &file);
    if (fd < 0) {
        transient_failure_ = is_transient(errno);
        return true;
    }
    const ModuleUnwindTable* table = find_table(file, search.copy.dlpi_addr);
    if (table == nullptr) table = add_table(fd, file, &search.copy);
    if (table != nullptr && table->hdr != 0) {
        fd_ = fd;
        table_ = table;
    } else {
        os::close_file(fd);
    }
    return true;
}

uint32_t UnwindTableReader::frame_rule(uintptr_t return_address) {
    // The call is the instruction before the return address: its rules are the frame's.
    const uintptr_t call = return_address - 1;
    if (!covers(call) && !open_module_of(call)) return kUnknownFrame;
    if (table_ == nullptr) return covers(call) && transient_failure_ ? kUnknownFrame : kUnwalkableFrame;
    const ModuleUnwindTable& table = *table_;
    const uint64_t pc = call - table.bias;
    const auto location = [&table](int32_t relative) { return table.hdr + static_cast<int64_t>(relative); };
    // The last sample, then the last entry after it, whose initial location is at or before pc.
    const uint32_t sample_count = (table.fde_count + kSampleStride - 1) / kSampleStride;
    uint32_t low = 0, high = sample_count;
    while (high - low > 1) {
        const uint32_t middle = low + (high - low) / 2;
        (location(table.samples[middle]) <= pc ? low : high) = middle;
    }
    if (location(table.samples[low]) > pc) return kUnwalkableFrame;
    int32_t entries[2 * kSampleStride];
    const uint32_t first = low * kSampleStride;
    const uint32_t count = table.fde_count - first < kSampleStride ? table.fde_count - first : kSampleStride;
    const uint64_t bytes = uint64_t{count} * kTableEntryBytes;
    if (read(table.hdr + kHdrTableOffset + uint64_t{first} * kTableEntryBytes, entries, bytes) != bytes)
        return kUnwalkableFrame;
    low = 0;
    high = count;
    while (high - low > 1) {
        const uint32_t middle = low + (high - low) / 2;
        (location(entries[2 * middle]) <= pc ? low : high) = middle;
    }
    const CfiSource source{read_module_bytes, this};
    return frame_rule_from_fde(source, location(entries[2 * low + 1]), pc);
}

}  // namespace leakwrap
