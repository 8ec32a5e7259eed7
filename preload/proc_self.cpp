#include "proc_self.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leakwrap {
namespace {

constinit ProcessIdentity g_identity{};

// Reads up to size-1 bytes of a /proc file and NUL-terminates; returns the byte count.
std::size_t read_small_file(const char* path, char* buffer, std::size_t size) {
    std::size_t used = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n;
        while (used + 1 < size && (n = read(fd, buffer + used, size - 1 - used)) > 0) used += n;
        close(fd);
    }
    buffer[used] = '\0';
    return used;
}

uint64_t read_start_time(const char* stat_path) {
    char stat[1024];
    read_small_file(stat_path, stat, sizeof stat);
    // The command name in field 2 may contain spaces and parentheses: count from the last ')'.
    const char* field = std::strrchr(stat, ')');
    if (field == nullptr) return 0;
    for (int index = 2; index < 22 && field != nullptr; ++index) {
        field = std::strchr(field + 1, ' ');
    }
    return field == nullptr ? 0 : std::strtoull(field + 1, nullptr, 10);
}

}  // namespace

const ProcessIdentity& refresh_process_identity() {
    ProcessIdentity& id = g_identity;
    id.pid = getpid();
    id.start_time_ticks = read_start_time("/proc/self/stat");
    std::size_t n = read_small_file("/proc/sys/kernel/random/boot_id", id.boot_id, sizeof id.boot_id);
    while (n > 0 && id.boot_id[n - 1] == '\n') id.boot_id[--n] = '\0';
    ssize_t length = readlink("/proc/self/exe", id.exe_path, sizeof id.exe_path - 1);
    id.exe_path[length > 0 ? length : 0] = '\0';
    n = read_small_file("/proc/self/cmdline", id.command_line, sizeof id.command_line);
    for (std::size_t i = 0; i < n; ++i)
        if (id.command_line[i] == '\0') id.command_line[i] = ' ';
    while (n > 0 && id.command_line[n - 1] == ' ') id.command_line[--n] = '\0';
    return id;
}

const ProcessIdentity& current_process_identity() { return g_identity; }

uint64_t start_time_ticks_of(int pid) {
    char path[32];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    return read_start_time(path);
}

}  // namespace leakwrap
