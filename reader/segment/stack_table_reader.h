// The stack table of a segment copy read into a StackStore. Apart from the rest of the parser
// because it is the one table whose records name each other (a stack its innermost Ruby frame,
// a frame its caller) and are shared by many sites, so it has checks, and a copy, of its own.
#pragma once

#include "reference_set.h"
#include "segment_bytes.h"
#include "segment_parser.h"
#include "segment_snapshot.h"

#include <leakwrap/segment_layout.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

namespace leakwrap::segment_parsing {

// A stack record of any layout, as read, its depths not yet checked.
struct StackRecordFields {
    uint32_t state;
    uint32_t module_generation;
    uint32_t native_depth;
    uint32_t ruby_depth;
    uint32_t ruby;  // the reference of the innermost Ruby frame record (layout 6 on)
    bool reduced;
};

// The stacks that sites name: marked as the sites name them (name()), then each checked once
// however many sites share it, in reference order (check_named()), and copied into a StackStore
// sized to hold them all (store()), where a stack's index is its rank among the ready ones
// (index()). Layout 6 keeps each Ruby frame once, as a record naming its caller, for every stack
// whose backtrace goes through it; layout 5 kept a stack's Ruby frames inline after its native
// frames.
class StackTableReader {
public:
    StackTableReader(std::span<const std::byte> bytes, const layout::Header& header, const StringPool& strings);

    static constexpr uint32_t kNotReady = UINT32_MAX;

    // A site names the stack at `reference`, which must lie inside the table; owner() names the
    // site.
    template <class Owner>
    void name(uint32_t reference, const Owner& owner) {
        const uint64_t at = in_table(reference);
        if (at > size_ || record_size_ > size_ - at)
            fail(owner() + "'s stack at " + number(at) + " lies outside the " + number(size_) + "-byte stack table");
        named_.insert(reference);
    }

    // Every stack has been named: each is checked, and one not ready yet (a live writer's benign
    // race) is left out, with the sites naming it. first_owner(reference) names the first site
    // that names the stack, for messages.
    void check_named(const std::function<std::string(uint32_t reference)>& first_owner);

    // The index in the store of the stack at `reference`, kNotReady if it was not ready.
    uint32_t index(uint32_t reference) const { return named_.contains(reference) ? named_.rank(reference) : kNotReady; }

    // Every ready stack, copied out of the segment in reference order, with its Ruby backtrace:
    // layout 6's frame records become nodes (in reference order too) that share their callers as
    // the records do; layout 5's inline frames become a chain of nodes for each stack. Records
    // are read in table order, stacks and frames alike, and the copy's table is handed to
    // `done_with` a megabyte at a time behind them: made after the table was read whole, the
    // store of a Rails boot stood next to all of it, 2.4 MiB, at the parse's peak.
    std::shared_ptr<const StackStore> store(const DoneWithBytes& done_with) const;

private:
    // The offset in the table of a record named by a reference (stack or Ruby frame).
    static uint64_t in_table(uint32_t reference) { return uint64_t{reference} * layout::kStackAlignment; }
    uint64_t in_segment(uint32_t reference) const { return header_.stacks_offset + in_table(reference); }
    uint64_t native_frames_offset(uint32_t reference) const { return in_segment(reference) + record_size_; }

    StackRecordFields record_at(uint32_t reference) const;
    // Whether the stack at `reference` (inside the table: name() saw to it) is ready; checked if
    // so.
    template <class Owner>
    bool check(uint32_t reference, const Owner& owner);
    template <class Name>
    void check_ruby_frames(const StackRecordFields& stack, const Name& name);
    template <class Owner>
    void check_ruby_file(uint32_t offset, const Owner& owner);

    std::span<const std::byte> bytes_;
    const layout::Header& header_;
    const StringPool& strings_;
    uint64_t size_;
    bool ruby_inline_;             // layout 5's records (old_layouts.h)
    uint64_t record_size_;         // before its frames
    ReferenceSet named_;           // stacks named by sites; after check_named(), the ready ones
    ReferenceSet checked_frames_;  // Ruby frame records checked (layout 6)
    std::size_t native_frames_ = 0;
    std::size_t inline_ruby_frames_ = 0;  // layout 5
    std::unordered_map<uint32_t, SharedText> ruby_files_;
};

}  // namespace leakwrap::segment_parsing
