// Post-mortem segments are kept for a report after a kill or crash (and with LEAKWRAP_KEEP=1),
// but a server stopped with SIGTERM on every deploy would fill /dev/shm with them over weeks:
// each profiled process bounds them when it starts.
#pragma once

#include "config.h"

namespace leakwrap {

// One pass over /dev/shm: removes this user's segments of processes that are gone beyond the
// newest config.keep_dead and those unchanged for more than config.keep_dead_days days. Touches
// only regular files of this user named leakwrap.<pid> whose header names that pid; never
// follows a link, never waits on a file, never allocates.
void trim_dead_segments(const Config& config);

}  // namespace leakwrap
