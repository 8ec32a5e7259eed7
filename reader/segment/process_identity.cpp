#include "process_identity.h"

#include <leakwrap/process_stat.h>
#include <leakwrap/segment_layout.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>

namespace leakwrap {
namespace {

std::string read_small_file(const std::string& path) {
    std::ifstream file(path);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::string without_trailing_space(const std::string& text) { return std::string(proc::without_trailing_space(text)); }

}  // namespace

bool process_exists(pid_t pid) {
    // kill() with pid <= 0 addresses process groups, not a process.
    if (pid <= 0) return false;
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

namespace {

// Parsed as the preload parses its own (leakwrap/process_stat.h).
std::optional<proc::StatFields> read_proc_stat(pid_t pid) {
    const std::string stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
    proc::StatFields fields{};
    if (!proc::parse_stat(stat, &fields)) return std::nullopt;
    return fields;
}

}  // namespace

std::optional<uint64_t> process_start_time_ticks(pid_t pid) {
    const auto stat = read_proc_stat(pid);
    return stat ? std::optional(stat->start_time_ticks) : std::nullopt;
}

std::string current_boot_id() { return without_trailing_space(read_small_file(proc::kBootIdPath)); }

OwnerState owner_state(const Snapshot& snapshot) {
    if (snapshot.process_state == layout::kProcessExited) return OwnerState::exited;
    if (snapshot.process_state == layout::kProcessReplacedByExec) return OwnerState::replaced;
    if (!process_exists(snapshot.pid)) return OwnerState::dead;
    const auto stat = read_proc_stat(snapshot.pid);
    // A zombie still answers kill(pid, 0) but will never allocate again: its data is final.
    if (stat && (stat->state == 'Z' || stat->state == 'X')) return OwnerState::dead;
    const bool same_boot = current_boot_id() == without_trailing_space(snapshot.boot_id);
    const bool same_start = stat && stat->start_time_ticks == snapshot.start_time_ticks;
    return same_boot && same_start ? OwnerState::alive : OwnerState::stale;
}

std::string_view owner_state_name(OwnerState state) {
    switch (state) {
        case OwnerState::alive: return "alive";
        case OwnerState::dead: return "dead";
        case OwnerState::exited: return "exited";
        case OwnerState::stale: return "stale";
        case OwnerState::replaced: return "replaced";
    }
    return "unknown";
}

}  // namespace leakwrap

namespace leakwrap {

std::string current_command_line(const Snapshot& snapshot, OwnerState state) {
    if (state != OwnerState::alive) return snapshot.command_line;
    std::string line = read_small_file("/proc/" + std::to_string(snapshot.pid) + "/cmdline");
    std::replace(line.begin(), line.end(), '\0', ' ');
    line = without_trailing_space(line);
    return line.empty() ? snapshot.command_line : line;
}

}  // namespace leakwrap
