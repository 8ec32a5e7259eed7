// What the three parts of the segment share (segment.cpp: its creation and identity;
// segment_space.cpp: backing its tables as they fill; fork_snapshot.cpp: the hand-over to a
// forked child). Not for use elsewhere: segment.h is the interface.
#pragma once

#include <cstdint>

#include "config.h"
#include "leakwrap/segment_layout.h"
#include "site_counters.h"

namespace leakwrap {

inline uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Bytes of one shard's bins and of one shard's site deltas (each table is shard-major).
inline constexpr uint64_t kShardBinBytes = uint64_t{layout::kSizeClassCount} * sizeof(layout::BinCounters);
inline constexpr uint64_t kShardDeltaBytes = uint64_t{kSiteDeltaSlots} * sizeof(layout::SiteDelta);

// Where each part of a segment of this configuration lies.
struct Geometry {
    uint64_t bins_offset, site_deltas_offset, sites_offset, stacks_offset, stacks_capacity, modules_offset,
        strings_offset, size;
};

Geometry geometry_for(const Config& config);

// Maps a new segment for this pid (exclusively created), installs it as the current one with
// its header, the shared shard of its bins and site deltas, and its overflow sites backed; null
// (with a warning) on failure.
layout::Header* map_new_segment(const Config& config, const Geometry& g);

// The identity the reader checks (pid, start time, boot id, creation time).
void fill_identity(layout::Header* h, int parent_pid);

// Marks the header complete for readers.
void publish(layout::Header* h);

// segment_space.cpp: starts the reservation marks of a newly mapped segment, and tells how far
// the table holding `offset` is backed.
void start_reservations(const Geometry& g, int segment_fd);
uint64_t backed_until(uint64_t offset);
// Backs the bins and site deltas of shards `first` to `end` - 1, whatever
// Header::bin_shards_backed says (back_bin_shards moves it).
bool back_shard_range(uint32_t first, uint32_t end);

}  // namespace leakwrap
