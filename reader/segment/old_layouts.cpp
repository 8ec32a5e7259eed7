#include "old_layouts.h"

namespace leakwrap::segment_parsing {

uint32_t header_size_of_layout(uint32_t version) {
    return version >= 8 ? uint32_t{sizeof(layout::Header)} : layout::kHeaderSizeBeforeBirthGrid;
}

void translate_old_header(layout::Header& header) {
    if (header.layout_version < 8) {  // what lies beyond the older header is not its own
        header.birth_origin_boot_ns = 0;
        header.birth_floor_ns = 0;
        header.birth_cells = 0;
    }
    if (header.layout_version < 9) header.allocator_stats_offset = 0;              // a reserved word before
    if (header.layout_version < 11) header.flags = 0;                              // a reserved word before
    if (header.layout_version < 13) header.bin_shards_backed = header.bin_shards;  // all were backed
}

void leave_out_what_old_layouts_lack(uint32_t version, Snapshot& snapshot) {
    if (version < 7) snapshot.writer_private_bytes.reset();           // Header::private_kib was reserved
    if (version < 10) snapshot.counted_at_allocator_reading.reset();  // AllocatorStatistics::counted was padding
}

namespace layout5 {

bool has_its_stack_records(uint32_t version) { return version == 5; }

StackRecordFields load_stack_record(std::span<const std::byte> bytes, uint64_t at) {
    const auto record = load<layout::StackRecordV5>(bytes, at);
    return {record.state,      record.module_generation, record.native_depth,
            record.ruby_depth, layout::kNoRubyFrame,     (record.flags & layout::kStackReduced) != 0};
}

uint64_t whole_stack_record_size(const StackRecordFields& record) {
    return layout::stack_record_size_v5(record.native_depth, record.ruby_depth);
}

}  // namespace layout5
}  // namespace leakwrap::segment_parsing
