// parse_segment: a copy of a segment's bytes, checked part by part, made into a Snapshot. Apart
// from the Snapshot it makes, which the reports read without knowing of the bytes; its stack
// table is read by stack_table_reader.h, and what older layouts differ in is translated by
// old_layouts.h.
#pragma once

#include "segment_snapshot.h"

#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace leakwrap {

// Called with bytes that the parser has read for the last time, so that a caller whose memory
// holds them can free it as the snapshot grows: the site records, once their snapshot sites are
// made.
using DoneWithBytes = std::function<void(std::span<const std::byte>)>;

// Calls visit(first_slot, slots) for the runs of whole records, in order, that split `count` records
// of `record_size` bytes into chunks of at most `chunk_bytes` (one record at least).
template <class Visit>
void for_each_record_chunk(uint32_t count, uint64_t record_size, uint64_t chunk_bytes, const Visit& visit) {
    const auto per_chunk = static_cast<uint32_t>(std::clamp<uint64_t>(chunk_bytes / record_size, 1, UINT32_MAX));
    for (uint32_t first = 0; first < count;) {
        const uint32_t slots = std::min(per_chunk, count - first);
        visit(first, slots);
        first += slots;
    }
}

// Bounds the work of summing the shards; the writer keeps far fewer (one per thread, up to 64).
inline constexpr uint32_t kMaxBinShards = 256;
// Bounds the site delta table with it (at most 1M entries, 40 MiB); the writer keeps far fewer.
inline constexpr uint32_t kMaxSiteDeltaSlots = 4096;

// The shards of the bins and site deltas that may be read (R6): those below `backed`
// (Header::bin_shards_backed as the writer last stored it; every shard in layouts before 13) and
// the last, shared one. Calls visit(shard) for each, in order; for none if the header's counts
// are beyond the parser's bounds (it refuses them).
template <class Visit>
void for_each_readable_shard(const layout::Header& header, uint32_t backed, const Visit& visit) {
    if (header.bin_shards == 0 || header.bin_shards > kMaxBinShards || header.site_delta_slots > kMaxSiteDeltaSlots)
        return;
    backed = std::min(backed, header.bin_shards);
    for (uint32_t shard = 0; shard < backed; ++shard) visit(shard);
    if (backed < header.bin_shards) visit(header.bin_shards - 1);
}

// What a delta entry named, and how often it had moved, when a live copy took it (R10).
struct DeltaMark {
    uint32_t site = 0;
    uint32_t moves = 0;
};

// Where a live segment's site records are read from instead of the copy parsed: the file itself,
// so that the copy never holds the site table, the largest part of a segment (4.9 MiB of a Rails
// process's 7.4), next to the sites made of it. After parse_segment has checked the header, it
// reads the records once, calls after_names(), which copies into the bytes parsed what the sites
// name (stacks, modules and strings), reads the records again and calls after_sites(), which
// copies what counts after the sites (their delta entries, the records claimed since, the bins):
// the order the writer publishes them in.
struct SiteRecordSource {
    using Visit = std::function<void(uint32_t first_slot, std::span<const std::byte> records)>;
    // Calls visit() with the table's first `count` records of `record_size` bytes from `offset`
    // in slot order, each as it is then published, a chunk of whole records at a time.
    std::function<void(uint64_t offset, uint64_t record_size, uint32_t count, const Visit& visit)> read;
    std::function<void()> after_names;
    std::function<void()> after_sites;
    // The delta entries as after_names() found them, before the records were read again: an
    // entry whose moves changed by after_sites() had counts in transit meanwhile.
    std::function<const std::vector<DeltaMark>&()> deltas_before_sites;
    // The records claimed since the header was read (slots from its sites_claimed on), as
    // after_sites() read them after the delta entries, and the entries as they were after that:
    // an entry that names a late site and moved meanwhile may have moved its counts into the
    // record read, so its copy is left out. Without them, a site that started a new birth cell
    // while the records were read lost the cell's allocations for one read, while its older
    // cells counted their frees: a cache looked as if it gave memory back in bursts.
    std::function<std::span<const std::byte>()> late_records;
    std::function<const std::vector<DeltaMark>&()> deltas_after_late_records;
    // The counts of the sites in these slots (record and delta entries), read again from the live
    // segment in the order that never shows a block freed but not allocated (R12); nullopt if an
    // entry moved meanwhile. A copy reads a site's places one after another, so a block allocated
    // by one thread after the copy passed its entry and freed by another before the copy reached
    // theirs is counted freed and not allocated; a busy site can look so in copy after copy.
    std::function<std::optional<std::vector<Counters>>(std::span<const uint32_t> slots)> recount;
};

// Parses a private copy of a segment, its site records from `streamed` if given. Every offset,
// size and count is checked against the bytes before use; anything inconsistent throws
// SegmentError.
Snapshot parse_segment(std::span<const std::byte> bytes, const DoneWithBytes& done_with = {},
                       const SiteRecordSource* streamed = nullptr);

}  // namespace leakwrap
