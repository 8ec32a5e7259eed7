// Post-mortem segments are kept for a report after a kill or crash (and with LEAKWRAP_KEEP=1),
// but a server stopped with SIGTERM on every deploy would fill /dev/shm with them over weeks:
// each profiled process bounds them when it starts.
#pragma once

#include <cstdint>

#include "config.h"

namespace leakwrap {

// One pass over /dev/shm: removes this user's segments of processes that are gone beyond the
// newest config.keep_dead and those unchanged for more than config.keep_dead_days days, and
// every one left by an image that exec replaced (exec_calls.h), which counts for neither. Touches
// only regular files of this user named leakwrap.<pid> whose header names that pid; never
// follows a link, never waits on a file, never allocates.
//
// Bounded, whatever others plant there: it reads at most kMaxEntriesRead entries and opens at
// most most_segments_opened() files named like segments. A pass cut short by either bound has
// not seen every dead segment, so it cannot tell the newest: it removes only those too old.
inline constexpr uint32_t kMaxEntriesRead = 4096;
// Room for the segments LEAKWRAP_KEEP_DEAD keeps and a few more, so that a pass can apply it.
inline constexpr uint32_t kSegmentsOpenedBeyondKept = 64;
constexpr uint32_t most_segments_opened(const Config& config) { return config.keep_dead + kSegmentsOpenedBeyondKept; }
void trim_dead_segments(const Config& config);

}  // namespace leakwrap
