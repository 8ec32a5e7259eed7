// What the reader needs to know about this process (and to tell it from a later process that
// reuses its pid), read from /proc with plain syscalls into static buffers: no allocation.
#pragma once

#include <cstdint>

namespace leakwrap {

struct ProcessIdentity {
    int pid;
    uint64_t start_time_ticks;  // field 22 of /proc/self/stat
    char boot_id[40];
    char exe_path[4096];
    char command_line[4096];    // arguments joined by spaces, truncated if longer
};

// Re-reads everything (after fork the pid and start time change).
const ProcessIdentity& refresh_process_identity();
const ProcessIdentity& current_process_identity();

// Field 22 of /proc/<pid>/stat; 0 if the process is gone or its file unreadable.
uint64_t start_time_ticks_of(int pid);

}  // namespace leakwrap
