#include "birth_grid.h"

#include <leakwrap/segment_layout.h>

namespace leakwrap {

uint64_t BirthGrid::cell_start_ns(uint32_t cell) const { return layout::birth_cell_start_ns(cell, floor_ns); }

std::optional<uint64_t> BirthGrid::cell_end_ns(uint32_t cell) const {
    if (cell + 1 >= cells) return std::nullopt;
    return layout::next_birth_cell_start_ns(cell_start_ns(cell), cell, floor_ns);
}

uint32_t BirthGrid::cell_at(uint64_t since_origin_ns) const {
    uint64_t start = 0;
    for (uint32_t cell = 0; cell + 1 < cells; ++cell) {
        const uint64_t end = layout::next_birth_cell_start_ns(start, cell, floor_ns);
        if (since_origin_ns < end) return cell;
        start = end;
    }
    return cells == 0 ? 0 : cells - 1;
}

}  // namespace leakwrap
