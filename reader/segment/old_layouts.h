// Everything the parser does for layouts older than layout::kLayoutVersion alone (5 to 10, as
// segment_layout.h's version history tells them), in one place: the parser and the stack table
// reader call it where they read what those layouts lay out otherwise, so that to stop reading a
// layout is to delete its code here (and the call that only it needs) and to raise
// layout::kOldestReadableVersion.
#pragma once

#include "segment_bytes.h"
#include "segment_snapshot.h"
#include "stack_table_reader.h"

#include <leakwrap/segment_layout.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace leakwrap::segment_parsing {

// The header_size a writer of layout `version` records.
uint32_t header_size_of_layout(uint32_t version);

// The header as today's layout has it: what an older layout's lacked reads as none.
void translate_old_header(layout::Header& header);

// What a snapshot cannot say of an older layout's writer, that today's says, left out.
void leave_out_what_old_layouts_lack(uint32_t version, Snapshot& snapshot);

// Layout 5's stack records (StackRecordV5): the writer's hash first, and the stack's Ruby frames
// inline after its native frames, where later layouts name a shared frame record.
namespace layout5 {

// Whether a segment of layout `version` lays out its stack records so.
bool has_its_stack_records(uint32_t version);

inline constexpr uint64_t kStackRecordSize = sizeof(layout::StackRecordV5);  // before its frames

StackRecordFields load_stack_record(std::span<const std::byte> bytes, uint64_t at);

// With its frames, native and Ruby.
uint64_t whole_stack_record_size(const StackRecordFields& record);

// Calls visit(frame, index) for the Ruby frames of the record at `at`, innermost first.
template <class Visit>
void for_each_ruby_frame(std::span<const std::byte> bytes, uint64_t at, const StackRecordFields& record,
                         const Visit& visit) {
    const uint64_t frames = at + kStackRecordSize + record.native_depth * sizeof(uint64_t);
    for (uint32_t i = 0; i < record.ruby_depth; ++i)
        visit(load<layout::RubyFrame>(bytes, frames + i * sizeof(layout::RubyFrame)), i);
}

}  // namespace layout5
}  // namespace leakwrap::segment_parsing
