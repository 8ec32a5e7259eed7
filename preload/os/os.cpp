#include "os.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace leakwrap::os {
namespace {

void* map_anonymous(std::size_t bytes, int extra_flags) {
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
    return memory == MAP_FAILED ? nullptr : memory;
}

// The fixed part of the record getdents64 fills (glibc has no declaration of it; readdir would
// allocate). The NUL-terminated name follows at kDirentNameOffset.
struct LinuxDirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
};
constexpr std::size_t kDirentNameOffset = offsetof(LinuxDirent64, d_type) + sizeof(unsigned char);

// glibc's open, read, pread, write, close and nanosleep are cancellation points. A thread that
// another one cancelled would act on it inside them, in the middle of its program's malloc,
// which never acts on cancellation, and unwind through leakwrap's frames, which are noexcept:
// the program would abort. So these system calls are made through syscall(), which is not one.
int open_at(int directory, const char* path, int flags, mode_t mode = 0) {
    return static_cast<int>(syscall(SYS_openat, directory, path, flags, mode));
}
ssize_t read_from(int fd, void* buffer, std::size_t size) { return syscall(SYS_read, fd, buffer, size); }
ssize_t read_from_at(int fd, void* buffer, std::size_t size, uint64_t offset) {
    return syscall(SYS_pread64, fd, buffer, size, offset);
}
void close_descriptor(int fd) { syscall(SYS_close, fd); }

// glibc's shm_open(name): /dev/shm/<name>, neither followed if a link nor inherited across exec.
constexpr char kSharedMemoryDirectory[] = "/dev/shm/";
constexpr std::size_t kMaxSegmentName = 255;

}  // namespace

static_assert(kCurrentDirectory == AT_FDCWD);

void* map_private(std::size_t bytes) noexcept { return map_anonymous(bytes, 0); }

void* reserve_private(std::size_t bytes) noexcept { return map_anonymous(bytes, MAP_NORESERVE); }

void unmap(void* address, std::size_t bytes) noexcept { munmap(address, bytes); }

bool wipe_on_fork(void* address, std::size_t bytes) noexcept { return madvise(address, bytes, MADV_WIPEONFORK) == 0; }

int create_shared_segment(const char* name, uint64_t size, SharedMapping* out) noexcept {
    const mode_t mode = S_IRUSR | S_IWUSR;
    char path[sizeof kSharedMemoryDirectory + kMaxSegmentName];
    const std::size_t name_length = strnlen(name, kMaxSegmentName + 1);
    if (name_length > kMaxSegmentName) return ENAMETOOLONG;
    std::memcpy(path, kSharedMemoryDirectory, sizeof kSharedMemoryDirectory - 1);
    std::memcpy(path + sizeof kSharedMemoryDirectory - 1, name, name_length + 1);
    const int fd = open_at(AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return errno;
    // The umask may have taken bits away from the mode; fchmod gives exactly 0600.
    void* base = MAP_FAILED;
    if (fchmod(fd, mode) != 0 || ftruncate(fd, static_cast<off_t>(size)) != 0 ||
        (base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        const int error = errno;
        close_descriptor(fd);
        return error;
    }
    *out = SharedMapping{static_cast<std::byte*>(base), size, fd};
    return 0;
}

void release_shared_segment(const SharedMapping& mapping) noexcept {
    if (mapping.base != nullptr) munmap(mapping.base, mapping.size);
    if (mapping.fd >= 0) close_descriptor(mapping.fd);
}

void remove_shared_segment(const char* name) noexcept { shm_unlink(name); }

bool back_segment_bytes(int fd, uint64_t offset, uint64_t length) noexcept {
    return posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(length)) == 0;
}

std::size_t read_small_file(const char* path, char* buffer, std::size_t size) noexcept {
    std::size_t used = 0;
    const int fd = open_at(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n;
        while (used + 1 < size && (n = read_from(fd, buffer + used, size - 1 - used)) > 0) used += n;
        close_descriptor(fd);
    }
    buffer[used] = '\0';
    return used;
}

std::size_t read_link(const char* path, char* buffer, std::size_t size) noexcept {
    const ssize_t length = readlink(path, buffer, size - 1);
    const std::size_t used = length > 0 ? static_cast<std::size_t>(length) : 0;
    buffer[used] = '\0';
    return used;
}

bool read_head_of_own_file(int directory, const char* name, void* buffer, std::size_t size,
                           FileIdentity* file) noexcept {
    const int fd = open_at(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat status {};
    const bool readable = fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_uid == geteuid() &&
                          read_from_at(fd, buffer, size, 0) == static_cast<ssize_t>(size);
    close_descriptor(fd);
    if (readable && file != nullptr) *file = FileIdentity{status.st_dev, status.st_ino, status.st_mtim};
    return readable;
}

void remove_if_same_file(int directory, const char* name, const FileIdentity& file) noexcept {
    struct stat status {};
    if (fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0 && status.st_dev == file.device &&
        status.st_ino == file.inode)
        unlinkat(directory, name, 0);
}

int open_directory(const char* path) noexcept { return open_at(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

bool for_each_directory_entry(int directory, uint32_t most, DirectoryVisitor visit, void* context) noexcept {
    alignas(LinuxDirent64) char entries[8192];
    uint32_t visited = 0;
    for (;;) {
        const long got = syscall(SYS_getdents64, directory, entries, sizeof entries);
        if (got <= 0) return true;
        for (long at = 0; at < got;) {
            const auto* entry = reinterpret_cast<const LinuxDirent64*>(entries + at);
            at += entry->d_reclen;
            if (visited++ == most ||
                !visit(context, directory, reinterpret_cast<const char*>(entry) + kDirentNameOffset, entry->d_type))
                return false;
        }
    }
}

int open_regular_file(const char* path, FileIdentity* file) noexcept {
    const int fd = open_at(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat status {};
    if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode)) {
        *file = FileIdentity{status.st_dev, status.st_ino, status.st_mtim};
        return fd;
    }
    close_descriptor(fd);
    errno = ENODEV;
    return -1;
}

std::size_t read_at(int fd, uint64_t offset, void* buffer, std::size_t size) noexcept {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = read_from_at(fd, static_cast<char*>(buffer) + done, size - done, offset + done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    return done;
}

void close_file(int fd) noexcept { close_descriptor(fd); }

uint64_t monotonic_nanoseconds() noexcept {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

void yield_processor() noexcept { sched_yield(); }

void sleep_nanoseconds(uint64_t nanoseconds) noexcept {
    const timespec pause{static_cast<time_t>(nanoseconds / 1'000'000'000u),
                         static_cast<long>(nanoseconds % 1'000'000'000u)};
    syscall(SYS_nanosleep, &pause, nullptr);
}

SignalMask block_signals() noexcept {
    sigset_t all;
    sigfillset(&all);
    SignalMask previous{};
    pthread_sigmask(SIG_BLOCK, &all, &previous.blocked);
    return previous;
}

void restore_signals(const SignalMask& mask) noexcept { pthread_sigmask(SIG_SETMASK, &mask.blocked, nullptr); }

void write_to_standard_error(const char* text, std::size_t length) noexcept {
    syscall(SYS_write, STDERR_FILENO, text, length);
}

bool read_own_memory(const void* address, void* out, std::size_t bytes) noexcept {
    const int saved_errno = errno;
    iovec local{out, bytes};
    iovec remote{const_cast<void*>(address), bytes};
    const long copied = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
    const bool refused = copied < 0 && (errno == ENOSYS || errno == EPERM);
    errno = saved_errno;
    if (refused) std::memcpy(out, address, bytes);
    return refused || copied == static_cast<long>(bytes);
}

uint64_t stack_size_limit() noexcept {
    rlimit limit{};
    if (getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
    return limit.rlim_cur;
}

bool process_is_gone(int pid) noexcept { return kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace leakwrap::os
