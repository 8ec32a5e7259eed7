#include "proc_self.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "os.h"

namespace leakwrap {
namespace {

constinit ProcessIdentity g_identity{};

uint64_t read_start_time(const char* stat_path) {
    char stat[1024];
    os::read_small_file(stat_path, stat, sizeof stat);
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
    std::size_t n = os::read_small_file("/proc/sys/kernel/random/boot_id", id.boot_id, sizeof id.boot_id);
    while (n > 0 && id.boot_id[n - 1] == '\n') id.boot_id[--n] = '\0';
    os::read_link("/proc/self/exe", id.exe_path, sizeof id.exe_path);
    n = os::read_small_file("/proc/self/cmdline", id.command_line, sizeof id.command_line);
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
