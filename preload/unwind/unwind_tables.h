// The rule of a return address's frame read from its module's unwind table (.eh_frame_hdr and
// .eh_frame, see eh_frame.h) in the module's file, with pread, not through the module's mapping.
// Reading the mapping, as libunwind does, makes the kernel map up to 64 KiB of the file around
// each page touched (fault-around), and learning a thousand frames spread across a library
// touches its whole table, which then stays resident in the profiled program.
//
// A file is read only if it is the one mapped: its program headers equal those in memory and,
// where the module has a GNU build-id, so does the file's (a library upgraded on disk since it
// was loaded is not read). The main program is read through /proc/self/exe. A module without an
// absolute path (the vDSO) or without the common table layout (the binary-search table of
// 32-bit datarel entries that GNU ld, gold and lld write) is not read: its frames are left to
// libunwind.
//
// What a module's file was found to hold is kept for the life of the process, one entry per
// (file, load address), lock-free: its table's place and size, where its PT_LOAD segments lie
// in the file, and every 64th entry of its binary-search table, so that finding a frame's FDE
// takes one read of 64 entries. A walk then opens the file, finds its entry by the file's
// identity (device, inode, modification time), and reads the FDE and its CIE.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

// At start-up: reserves the table of modules (again: nothing); false if no memory, and then no
// file is read.
bool init_unwind_tables();

struct ModuleUnwindTable;

// The unwind tables one walk reads: the last module's file stays open until the walk ends, for
// the frames after it in the same module. Allocation-free; the one lock it takes is the
// loader's (dl_iterate_phdr), once per module opened. From looking a module up to closing its
// file, the reader is in a fork-fenced section (fork_fence.h); a frame that a fork turns it
// away from is kUnknownFrame.
class UnwindTableReader {
public:
    UnwindTableReader() = default;
    UnwindTableReader(const UnwindTableReader&) = delete;
    UnwindTableReader& operator=(const UnwindTableReader&) = delete;
    ~UnwindTableReader();

    // The frame_sizes.h rule of the frame that returns to `return_address`: a sized frame,
    // kFramePointerFrame, kOutermostFrame, kUnwalkableFrame (no module, no table entry, or a rule
    // no walk can follow), or kUnknownFrame when the module's file could not be opened for a
    // reason that may pass (no descriptor or memory left): it may be learned later.
    uint32_t frame_rule(uintptr_t return_address);

    // Up to `size` bytes of the open module's file at a link-time address (eh_frame.h's
    // CfiSource); 0 outside the file's part of its PT_LOAD segments.
    std::size_t read(uint64_t address, void* out, std::size_t size) const;

private:
    bool covers(uintptr_t address) const { return address - start_ < end_ - start_; }
    // False if a fork turned it away; the module may be known, or its file open, either way.
    bool open_module_of(uintptr_t address);
    void close_module();

    bool fenced_ = false;  // inside a fork-fenced section
    int fd_ = -1;
    bool transient_failure_ = false;
    uintptr_t start_ = 0;  // the module's runtime address range (its PT_LOAD segments)
    uintptr_t end_ = 0;
    const ModuleUnwindTable* table_ = nullptr;  // null: the module's file is not read
};

}  // namespace leakwrap
