// Whether the process that owns a segment is still the one running under its pid.
#pragma once

#include "segment_snapshot.h"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leakwrap {

enum class OwnerState {
    alive,
    dead,      // no such process: a post-mortem segment
    exited,    // the owner marked the segment on a normal exit
    stale,     // the pid now belongs to another process (or the machine rebooted)
    replaced,  // the owner called exec: the image that wrote the segment is gone, the pid may not be
};

OwnerState owner_state(const Snapshot& snapshot);

// "alive", "dead", "exited", "stale", "replaced": the names used in JSON and --list.
std::string_view owner_state_name(OwnerState state);

// True if a process with this pid exists, even one we may not signal.
bool process_exists(pid_t pid);

// The command line to show for a segment's owner: a live owner's current one (forked servers
// retitle their workers, e.g. "puma: cluster worker 0", after the segment recorded the parent's),
// else the one the segment recorded.
std::string current_command_line(const Snapshot& snapshot, OwnerState state);

// Field 22 of /proc/<pid>/stat, nullopt if the process is gone or the file is unreadable.
std::optional<uint64_t> process_start_time_ticks(pid_t pid);

// /proc/sys/kernel/random/boot_id without the trailing newline.
std::string current_boot_id();

}  // namespace leakwrap
