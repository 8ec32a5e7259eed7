#include "proc_self.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "leakwrap/process_stat.h"
#include "os.h"

namespace leakwrap {
namespace {

constinit ProcessIdentity g_identity{};

uint64_t read_start_time(const char* stat_path) {
    char stat[1024];
    const std::size_t length = os::read_small_file(stat_path, stat, sizeof stat);
    proc::StatFields fields{};
    return proc::parse_stat({stat, length}, &fields) ? fields.start_time_ticks : 0;
}

}  // namespace

const ProcessIdentity& refresh_process_identity() {
    ProcessIdentity& id = g_identity;
    id.pid = getpid();
    id.start_time_ticks = read_start_time("/proc/self/stat");
    std::size_t n = os::read_small_file(proc::kBootIdPath, id.boot_id, sizeof id.boot_id);
    id.boot_id[proc::without_trailing_space({id.boot_id, n}).size()] = '\0';
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

bool writer_is_gone(const layout::Header& header) {
    if (os::process_is_gone(header.pid)) return true;
    if (header.state != layout::kReady) return false;
    const ProcessIdentity& me = current_process_identity();
    if (header.boot_id[0] != '\0' && me.boot_id[0] != '\0' &&
        std::memcmp(header.boot_id, me.boot_id, sizeof header.boot_id) != 0)
        return true;
    const uint64_t start_time = start_time_ticks_of(header.pid);
    return start_time != 0 && start_time != header.start_time_ticks;
}

}  // namespace leakwrap
