// `--children`: one report for a process and its descendants, such as puma's master and the
// workers it forks. The workers' segments are read like the root's and merged into one snapshot
// whose records keep their stacks, so that the report's rows join records with equal stacks and
// Ruby frames across processes (forked workers share the root's layout).
#pragma once

#include "segment_snapshot.h"

#include <sys/types.h>

#include <functional>
#include <vector>

namespace leakwrap {

// The live descendants of a process, found through /proc/PID/task/TID/children, parents before
// their children; empty when it has none or is gone.
std::vector<pid_t> descendants(pid_t root);

// The snapshots of those live descendants, each read by `read`; one that exits meanwhile, has no
// segment or cannot be read (`read` throws) is passed over, as is one whose segment is not alive.
std::vector<Snapshot> read_live_descendants(pid_t root, const std::function<Snapshot(pid_t)>& read);

// One snapshot of the tree: the root's identity and modules (and any module only a descendant
// mapped), every process's site records with their ids moved past the previous processes' so
// that none collide (the root's keep theirs), summed totals, bins and RSS, and `members` saying
// which process each record came from. Descendants are ordered by start time, so that a worker
// that replaces another joins at the end and the ids of the others stay.
Snapshot merge_process_tree(Snapshot root, std::vector<Snapshot> descendants);

}  // namespace leakwrap
