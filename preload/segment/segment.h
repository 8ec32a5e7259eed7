// The process's shared-memory segment /dev/shm/leakwrap.<pid>: creation (exclusive, mode 0600,
// through os.h) and the process identity the reader checks (segment.cpp); tmpfs reservation so
// that no write can ever raise SIGBUS, the string pool and the stack table's bytes
// (segment_space.cpp); the hand-over to a fresh segment in a forked child (fork_snapshot.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"
#include "leakwrap/segment_layout.h"

namespace leakwrap {

// Base address and geometry of the current segment; null base means "no segment" (disabled
// or creation failed). Read on the hot path, so plain globals.
struct SegmentView {
    std::byte* base;
    layout::Header* header;
    layout::BinCounters* bins;
    layout::SiteDelta* site_deltas;
    std::byte* stacks;         // the stack table
    uint64_t stacks_capacity;  // its bytes
    uint32_t site_capacity;
    uint32_t max_depth;       // native frames per stack
    uint32_t max_ruby_depth;  // Ruby frames per stack
};
extern constinit SegmentView g_segment;

inline layout::SiteRecord* site_record(uint32_t index) {
    return reinterpret_cast<layout::SiteRecord*>(g_segment.base + g_segment.header->sites_offset) + index;
}

inline layout::StackRecord* stack_record(uint32_t reference) {
    return reinterpret_cast<layout::StackRecord*>(g_segment.stacks + uint64_t{reference} * layout::kStackAlignment);
}

inline uint64_t* stack_frames(layout::StackRecord* record) { return reinterpret_cast<uint64_t*>(record + 1); }

// Ruby frame records share the stack table and its references (layout R8).
inline layout::RubyFrameRecord* ruby_frame_record(uint32_t reference) {
    return reinterpret_cast<layout::RubyFrameRecord*>(g_segment.stacks + uint64_t{reference} * layout::kStackAlignment);
}

inline const char* pool_string(uint32_t offset) {
    return reinterpret_cast<const char*>(g_segment.base + g_segment.header->strings_offset + offset);
}

inline layout::ModuleRecord* module_record(uint32_t index) {
    const layout::Header* h = g_segment.header;
    return reinterpret_cast<layout::ModuleRecord*>(g_segment.base + h->modules_offset +
                                                   uint64_t{index} * h->module_record_size);
}

// Creates the segment for the calling process, its header's flags `header_flags` (fails with a
// warning, never throws).
bool create_segment(const Config& config, uint32_t header_flags);

// Hands out `bytes` of the stack table, backed; returns the offset within the table, or
// UINT64_MAX when the table (or /dev/shm) is full.
uint64_t claim_stack_bytes(uint64_t bytes);

// Makes [offset, offset + length) of the segment backed by tmpfs pages, so writing there cannot
// fault with SIGBUS when /dev/shm is full. False if the space cannot be had.
bool reserve_segment_bytes(uint64_t offset, uint64_t length);

// Makes the bins and site deltas of shards 0 to `shard_end` - 1 backed, and says so in the
// header (bin_shards_backed), before a thread counts in shard `shard_end` - 1. False if the
// space cannot be had: the thread then counts in the shared shard, backed at creation.
bool back_bin_shards(uint32_t shard_end);

// Copies `length` bytes and a NUL into the string pool; false when the pool is full.
bool intern_string(const char* text, std::size_t length, layout::StringRef* out);

// Removes the name (the mapping stays valid: late frees during exit still land somewhere).
void unlink_segment();

// fork(): the parent copies what is in use before forking (while its other threads may still
// count), the child then moves onto its own segment initialised from that copy. The copy is the
// forking thread's own (ThreadState::fork_snapshot): threads that fork at once run these
// handlers at once, each with its copy, and the child's one thread finds its own there.
void snapshot_segment_for_fork();
void discard_fork_snapshot();
bool adopt_fork_snapshot_in_child(const Config& config);

}  // namespace leakwrap
