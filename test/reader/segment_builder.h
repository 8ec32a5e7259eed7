// Test-only writer of segments laid out per include/leakwrap/segment_layout.h, so parser tests
// start from a known-valid segment and break exactly one thing.
#pragma once

#include <leakwrap/segment_layout.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace leakwrap::testing {

// Far above any pid_max, so no process ever has it.
inline constexpr int32_t kAbsentPid = 2147483000;

// The slot of SegmentBuilder::sites[0]: the overflow sites come first.
inline constexpr uint32_t kFirstSiteSlot = layout::kOverflowSites;

struct BuiltRubyFrame {
    std::string file;
    uint32_t line = 0;
};

// A site and, unless it is an overflow site, a stack of its own in the stack table. In layout 6
// its Ruby frames are records shared with every other site whose backtrace has the same frames
// from them outward, as the writer shares them.
struct BuiltSite {
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;
    std::vector<uint64_t> frames;
    uint32_t module_generation = 0;
    std::optional<uint32_t> size_class;  // default: the class of the average allocated block
    uint32_t birth_cell = 0;
    std::string ruby_file;  // "": no Ruby backtrace
    uint32_t ruby_line = 0;
    std::vector<BuiltRubyFrame> outer_ruby;  // the Ruby backtrace beyond ruby_file:ruby_line
    bool reduced = false;                    // layout::kStackReduced
    uint32_t state = layout::kReady;
    uint32_t stack_state = layout::kReady;
};

// Counters added to one shard of one size class.
struct BuiltBin {
    uint32_t size_class = 0;
    uint32_t shard = 0;
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;
};

// Counts in one entry of the site delta table, not yet added to the site's record.
struct BuiltDelta {
    uint32_t shard = 0;
    uint32_t site = 0;  // the slot it names (layout::kNoDeltaSite: an empty entry)
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t alloc_bytes = 0;
    uint64_t free_bytes = 0;
    // Index within the shard; default: the writer's direct mapping, site & (site_delta_slots - 1).
    std::optional<uint32_t> slot;
};

struct BuiltModule {
    std::string path;
    uint64_t load_bias = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    uint32_t load_generation = 0;
    uint32_t unload_generation = layout::kStillLoaded;
    std::vector<uint8_t> build_id;
    uint32_t state = layout::kReady;
};

struct SegmentBuilder {
    // Or 5, the previous layout, whose stacks (layout::StackRecordV5) hold their Ruby frames inline.
    uint32_t layout_version = layout::kLayoutVersion;
    int32_t pid = kAbsentPid;
    int32_t parent_pid = 1;
    uint64_t start_time_ticks = 12345;
    uint64_t created_unix_ns = 1700000000000000000ull;
    std::string boot_id = "00000000-1111-2222-3333-444444444444";
    std::string exe = "/usr/bin/leaky";
    std::string command_line = "leaky --fast";
    uint32_t max_depth = 8;
    uint32_t max_ruby_depth = 8;
    uint32_t site_capacity = layout::kMinSiteCapacity + 11;
    uint64_t stack_slack = 64;  // bytes of the stack table beyond the stacks written
    uint32_t module_capacity = 4;
    uint32_t strings_capacity = 1024;
    uint32_t bin_shards = 3;
    // Header::bin_shards_backed: the shards below it and the last may be read (R6); at most
    // bin_shards - 1, all of them.
    uint32_t bin_shards_backed = UINT32_MAX;
    uint32_t site_delta_slots = 4;  // per shard; 0: no delta table
    uint64_t sample_interval = 0;
    // The birth grid (layout 8 on; a builder of an older layout writes none): by default the
    // writer's, from the start.
    uint32_t birth_cells = layout::kMaxBirthCells;
    uint64_t birth_floor_ns = layout::kBirthFloorNs;
    std::optional<uint64_t> birth_origin_boot_ns;  // default: start_time_ticks at 100 a second
    uint64_t lost_sites = 0;
    uint32_t process_state = layout::kProcessRunning;
    std::map<uint32_t, BuiltSite> overflow_sites;  // by size class, which is also the slot
    std::vector<BuiltSite> sites;                  // slots kFirstSiteSlot, kFirstSiteSlot + 1, ...
    std::vector<BuiltModule> modules;
    // Entries of the site delta table; every other entry is empty (kNoDeltaSite). Two deltas
    // for the same entry are an error.
    std::vector<BuiltDelta> deltas;
    // Default: every site's counters, and every delta's, in the bin of the site's class (sites in
    // shard slot % bin_shards, deltas in their own), as an exact-mode writer would have counted
    // them.
    std::optional<std::vector<BuiltBin>> bins;
    // The allocator's statistics (layout 9 on), after the header as the writer puts them; none:
    // no place for them (allocator_stats_offset 0).
    std::optional<layout::AllocatorStatistics> allocator_statistics;

    std::vector<std::byte> build() const;
};

// Offsets of the parts of a segment made by SegmentBuilder::build().
uint64_t site_offset(const std::vector<std::byte>& segment, uint32_t slot);
// The stack record of the site in `slot` (not an overflow site).
uint64_t stack_offset(const std::vector<std::byte>& segment, uint32_t slot);
// Ruby frame `index` (0: the innermost) of that stack: in layout 6 its layout::RubyFrameRecord, in
// layout 5 its layout::RubyFrame inline in the stack; either way a RubyFrame is there.
uint64_t ruby_frame_offset(const std::vector<std::byte>& segment, uint32_t slot, uint32_t index);
uint64_t module_offset(const std::vector<std::byte>& segment, uint32_t slot);
uint64_t bin_offset(const std::vector<std::byte>& segment, uint32_t size_class, uint32_t shard);
uint64_t site_delta_offset(const std::vector<std::byte>& segment, uint32_t shard, uint32_t slot);

// Copies a record out, lets the test change it, and writes it back.
template <class Record, class Change>
void patch(std::vector<std::byte>& segment, uint64_t offset, Change change) {
    Record record;
    std::memcpy(&record, segment.data() + offset, sizeof(record));
    change(record);
    std::memcpy(segment.data() + offset, &record, sizeof(record));
}

template <class Change>
void patch_header(std::vector<std::byte>& segment, Change change) {
    patch<layout::Header>(segment, 0, change);
}

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes, mode_t mode = 0600);

}  // namespace leakwrap::testing
