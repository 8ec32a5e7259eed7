// The preload's identity helper: what the reader needs to know about this process (and to tell
// it from a later process that reuses its pid), and whether the process that wrote another
// segment still runs. Read from /proc through os.h into static or stack buffers, parsed by
// leakwrap/process_stat.h (the reader's parser too): no allocation.
#pragma once

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

struct ProcessIdentity {
    int pid;
    uint64_t start_time_ticks;  // field 22 of /proc/self/stat
    char boot_id[40];
    char exe_path[4096];
    char command_line[4096];  // arguments joined by spaces, truncated if longer
};

// Re-reads everything (after fork the pid and start time change).
const ProcessIdentity& refresh_process_identity();
const ProcessIdentity& current_process_identity();

// Field 22 of /proc/<pid>/stat; 0 if the process is gone or its file unreadable.
uint64_t start_time_ticks_of(int pid);

// No process under the header's pid, or another one than wrote it (the pid reused, the machine
// rebooted). A header not yet published may lack the identity: only a missing process counts.
bool writer_is_gone(const layout::Header& header);

}  // namespace leakwrap
