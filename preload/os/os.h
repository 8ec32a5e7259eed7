// The system calls of libleakwrap.so, named for what it needs of the kernel (as mimalloc's
// prim/): private memory, the shared-memory segment and its backing, small /proc files, the
// segment files of /dev/shm, the modules' files (their unwind tables). Everything else in
// preload/ asks through here.
//
// Every function here is allocation-free and never throws: it calls the kernel (through
// glibc's thin syscall wrappers, or syscall() where the wrapper is a cancellation point) with
// the caller's buffers or stack buffers, never malloc, stdio or anything that could lock. So
// each may run with the reentrancy guard held, before the real allocator is known, in a forked
// child before it has its own segment, and in a signal handler: POSIX lists open, read, close,
// fstat, readlink, unlink, kill as async-signal-safe; mmap, munmap, fallocate, pread and
// getdents64 are single syscalls; the segment's file is created as glibc's shm_open (2.34 and
// later) does, an open of /dev/shm/<name> (the path built on the stack), and removed by
// shm_unlink, an unlink of it.
// None waits for another thread but the pauses below, which a caller asks for; none is on the
// per-allocation fast path: they run at start-up, at fork and exit, once per thread, when a
// table needs more room, or when a walk learns a frame. None is a cancellation point: a thread
// cancelled by another acts on it at its program's next one, never inside malloc.
// Failures are reported by the return value; errno is left as the call set it.
//
// Left where they are, each the one thing its caller does: _exit's exit_group (lifecycle.cpp),
// and getpid, the wall clock and sysconf, which read what the kernel hands out without a file.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <cstddef>
#include <cstdint>

namespace leakwrap::os {

// --- Private memory --------------------------------------------------------------------------

// Private anonymous memory, zeroed, committed as pages are touched; null on failure.
void* map_private(std::size_t bytes) noexcept;
// The same without reserving swap for it (MAP_NORESERVE): for tables sized for the worst case,
// of which a process touches a fraction.
void* reserve_private(std::size_t bytes) noexcept;
void unmap(void* address, std::size_t bytes) noexcept;
// Private anonymous pages that a forked child gets zeroed (MADV_WIPEONFORK); false where the
// kernel (before 4.14) or the mapping does not allow it.
bool wipe_on_fork(void* address, std::size_t bytes) noexcept;

// --- The shared-memory segment ----------------------------------------------------------------

struct SharedMapping {
    std::byte* base;
    uint64_t size;
    int fd;  // kept open: backing the segment's bytes needs it
};

// Creates /dev/shm/<name> exclusively (O_CREAT|O_EXCL: never follows a link, never opens an
// existing file), mode 0600 whatever the umask, `size` bytes long and sparse, and maps it shared
// read-write. Returns 0, or the errno of the step that failed (EEXIST: the name is taken); on a
// failure after the file was created, its descriptor is closed and its name left for the caller
// to remove.
int create_shared_segment(const char* name, uint64_t size, SharedMapping* out) noexcept;
// Unmaps a segment and closes its descriptor (a forked child's view of its parent's segment).
void release_shared_segment(const SharedMapping& mapping) noexcept;
// Removes /dev/shm/<name>; mappings of it stay valid.
void remove_shared_segment(const char* name) noexcept;
// Gives [offset, offset + length) of the segment file tmpfs pages, so that writing there can
// never fault with SIGBUS; false if /dev/shm has no room (posix_fallocate).
bool back_segment_bytes(int fd, uint64_t offset, uint64_t length) noexcept;

// --- Files: /proc and /dev/shm ----------------------------------------------------------------

// Reads up to size-1 bytes of a small file (a /proc file: read until EOF) and NUL-terminates
// them; returns the byte count, 0 if the file cannot be read.
std::size_t read_small_file(const char* path, char* buffer, std::size_t size) noexcept;
// The target of a symbolic link (/proc/self/exe), NUL-terminated and truncated to size-1 bytes;
// returns its length, 0 if it cannot be read.
std::size_t read_link(const char* path, char* buffer, std::size_t size) noexcept;

// Which file was read, to remove that one file later even if its name is taken again.
struct FileIdentity {
    dev_t device;
    ino_t inode;
    timespec modified;
};

// The first `size` bytes of `name` (relative to the open `directory`, or a path with
// kCurrentDirectory), only if it is a regular file of this user: opened without following a
// link and without waiting (O_NOFOLLOW, O_NONBLOCK: anyone can plant a link or a FIFO under a
// name to come), nothing read before fstat shows what it is. False if not, or shorter.
inline constexpr int kCurrentDirectory = -100;  // AT_FDCWD
bool read_head_of_own_file(int directory, const char* name, void* buffer, std::size_t size,
                           FileIdentity* file) noexcept;
// Unlinks `name` in `directory` if it is still the file `file` (not followed if a link).
void remove_if_same_file(int directory, const char* name, const FileIdentity& file) noexcept;

// Opens a directory to read its entries and act on them by name; -1 if it cannot.
int open_directory(const char* path) noexcept;
// Calls visit(context, directory, name, d_type) for the entries of `directory` (getdents64 into
// a stack buffer: readdir would allocate) until it has visited `most` of them or visit returns
// false. True if every entry was visited.
using DirectoryVisitor = bool (*)(void* context, int directory, const char* name, unsigned char type);
bool for_each_directory_entry(int directory, uint32_t most, DirectoryVisitor visit, void* context) noexcept;

// --- Module files ----------------------------------------------------------------------------

// Opens a regular file to read (a module's ELF file, for its unwind table), without waiting
// (O_NONBLOCK), and says which file it is; the descriptor, or -1 with errno set (ENODEV for a
// file that is not regular).
int open_regular_file(const char* path, FileIdentity* file) noexcept;
// Reads up to `size` bytes at `offset` (pread, retried when interrupted); returns how many.
std::size_t read_at(int fd, uint64_t offset, void* buffer, std::size_t size) noexcept;
void close_file(int fd) noexcept;

// --- Time and scheduling ----------------------------------------------------------------------

// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonic_nanoseconds() noexcept;
// Gives the processor to another thread that is ready to run (sched_yield).
void yield_processor() noexcept;
void sleep_nanoseconds(uint64_t nanoseconds) noexcept;

// --- Signals ---------------------------------------------------------------------------------

// The calling thread's signal mask, as block_signals() found it.
struct SignalMask {
    sigset_t blocked;
};
// Blocks every signal a program may handle until restore_signals(): one that arrives meanwhile is
// handled after (pthread_sigmask, async-signal-safe; glibc keeps its own two signals unblocked).
SignalMask block_signals() noexcept;
void restore_signals(const SignalMask& mask) noexcept;

// --- Diagnostics -----------------------------------------------------------------------------

// Writes a line of a warning to file descriptor 2, as far as it goes.
void write_to_standard_error(const char* text, std::size_t length) noexcept;

// --- This process's memory ------------------------------------------------------------------

// Copies `bytes` at `address` of this process into `out` without faulting (process_vm_readv):
// false if some of them are not readable (unmapped, PROT_NONE). Where the system call itself is
// refused (seccomp, no such call), reads them directly. errno is left as it was.
bool read_own_memory(const void* address, void* out, std::size_t bytes) noexcept;

// The soft limit of the main thread's stack size (RLIMIT_STACK); 0 if it is unlimited or unknown.
uint64_t stack_size_limit() noexcept;

// --- Processes --------------------------------------------------------------------------------

// No process has this pid (kill(pid, 0) fails with ESRCH); a process we may not signal exists.
bool process_is_gone(int pid) noexcept;

}  // namespace leakwrap::os
