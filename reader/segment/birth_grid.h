// When the blocks of a site record were allocated: the writer's birth grid (segment_layout.h,
// R9), and what a report was narrowed to by it (--born-after, --born-before).
#pragma once

#include <cstdint>
#include <optional>

namespace leakwrap {

struct BirthGrid {
    uint64_t origin_boot_ns = 0;  // CLOCK_BOOTTIME of birth time 0
    uint64_t floor_ns = 0;        // width of the first cells
    uint32_t cells = 0;           // the last one has no end

    // Time since the origin at which a cell starts; where it ends, none for the last cell.
    uint64_t cell_start_ns(uint32_t cell) const;
    std::optional<uint64_t> cell_end_ns(uint32_t cell) const;
    // The cell holding a moment, given as time since the origin.
    uint32_t cell_at(uint64_t since_origin_ns) const;

    bool operator==(const BirthGrid&) const = default;
};

// What --born-after / --born-before kept of a snapshot: the records born in cells
// [first_cell, end_cell); the others, and the overflow records (which have no birth time), are
// left out. The live blocks and bytes of both (estimated in sampling mode).
struct BirthSelection {
    std::optional<uint32_t> first_cell;
    std::optional<uint32_t> end_cell;
    uint64_t live_blocks_kept = 0;
    uint64_t live_bytes_kept = 0;
    uint64_t records_left_out = 0;  // in use (Site::in_use)
    uint64_t live_blocks_left_out = 0;
    uint64_t live_bytes_left_out = 0;
};

}  // namespace leakwrap
