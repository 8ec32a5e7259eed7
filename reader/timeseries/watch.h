// `leakwrap-report watch`: samples a live process's segment at a fixed interval, read-only, and
// writes one series line per sample (series.h) plus a one-line summary for people.
#pragma once

#include "focus_patterns.h"
#include "process_identity.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace leakwrap {

inline constexpr uint64_t kDefaultWatchMinBytes = 4096;

struct WatchOptions {
    pid_t pid = 0;
    std::chrono::milliseconds interval{5000};
    std::optional<std::size_t> count;                   // stop after this many samples
    std::optional<std::chrono::milliseconds> duration;  // stop once this much time has passed
    // Sites holding less are left out of the series lines: a real program has thousands of sites
    // with a few bytes each, and they would make the series many times larger for nothing.
    uint64_t min_bytes = kDefaultWatchMinBytes;
    // --focus, --ignore: the series keeps only the sites they keep (the totals stay whole).
    FocusPatterns focus;
    SymbolizerOptions symbolizer;  // --libc-lines, for the series and --openmetrics-dir alike
    // Called with the snapshot of every sample once its line is written (--openmetrics-dir).
    std::function<void(const Snapshot&)> on_sample;
};

// Reads the segment of a pid, throwing with a message for people when there is none.
using ProcessReader = std::function<Snapshot(pid_t)>;

struct WatchResult {
    std::size_t samples = 0;
    std::string stop_reason;  // "--count reached", "process 42 exited", "interrupted"
};

// Why a process can no longer be sampled: "process 42 exited", "process 42 died", "pid 42 now
// belongs to another process".
std::string gone_reason(pid_t pid, OwnerState state);

// Samples until the count or duration is reached, the process is gone, or SIGINT/SIGTERM
// arrives; every line is flushed as soon as it is written, so whatever was sampled is kept. The
// first sample must succeed (else it throws); a process that goes away later just ends the watch.
WatchResult watch_process(const WatchOptions& options, const ProcessReader& read_process, std::ostream& series,
                          std::ostream& summary);

}  // namespace leakwrap
