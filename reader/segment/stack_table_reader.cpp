#include "stack_table_reader.h"

#include "flat_slots.h"
#include "old_layouts.h"

#include <vector>

namespace leakwrap::segment_parsing {
namespace {

// RubyNode keeps its caller's distance in 32 bits: nodes of layout 6 are no more than the frame
// records a stack table holds (layout 5's inline frames name only the next node).
static_assert(layout::kMaxStackTableBytes / sizeof(layout::RubyFrameRecord) <= INT32_MAX);

// Numbers each distinct return address as first seen, appending it to `addresses`.
class DistinctAddresses {
public:
    explicit DistinctAddresses(std::vector<uint64_t>& addresses) : addresses_(addresses) {}

    uint32_t index_of(uint64_t address) {
        uint32_t* slot = slots_.find(*this, address, mixed_key(address));
        if (*slot == 0) {
            addresses_.push_back(address);
            slots_.occupy(slot, addresses_.size() - 1);
        }
        return *slot - 1;
    }

    bool key_equals(std::size_t entry, uint64_t address) const { return addresses_[entry] == address; }
    uint64_t hash_of(std::size_t entry) const { return mixed_key(addresses_[entry]); }

private:
    std::vector<uint64_t>& addresses_;
    FlatSlots<DistinctAddresses> slots_;
};

}  // namespace

StackTableReader::StackTableReader(std::span<const std::byte> bytes, const layout::Header& header,
                                   const StringPool& strings)
    : bytes_(bytes),
      header_(header),
      strings_(strings),
      // Checked against the capacity, like strings: a stack copied after the header may lie past
      // the stacks_used read first.
      size_(header.stacks_capacity),
      ruby_inline_(layout5::has_its_stack_records(header.layout_version)),
      record_size_(ruby_inline_ ? layout5::kStackRecordSize : sizeof(layout::StackRecord)) {}

StackRecordFields StackTableReader::record_at(uint32_t reference) const {
    if (ruby_inline_) return layout5::load_stack_record(bytes_, in_segment(reference));
    const auto record = load<layout::StackRecord>(bytes_, in_segment(reference));
    return {record.state,        record.module_generation,
            record.native_depth, record.ruby_depth,
            record.ruby,         (record.flags & layout::kStackReduced) != 0};
}

// Each file once, by its place in the string pool (the writer stores each name once).
template <class Owner>
void StackTableReader::check_ruby_file(uint32_t offset, const Owner& owner) {
    const auto [entry, is_new] = ruby_files_.try_emplace(offset);
    if (is_new) entry->second = strings_.get_terminated(offset, owner);
}

// A layout 6 stack's Ruby backtrace, from its innermost frame record outward: as many records
// as the stack has Ruby frames, each inside the table with a depth one less than the frame it
// calls, down to the outermost (depth 1), which names no caller. Depths that fall by exactly
// one also end every cycle. Stacks share their outer frames, so a record is checked once, with
// the first stack that reaches it; a later one needs only its depth to agree, the record's
// callers having been checked then: the work stays linear in the table.
template <class Name>
void StackTableReader::check_ruby_frames(const StackRecordFields& stack, const Name& name) {
    if (stack.ruby_depth == 0 && stack.ruby != layout::kNoRubyFrame)
        fail(name() + " has no Ruby frames but names a Ruby frame record at " + number(in_table(stack.ruby)));
    if (stack.ruby_depth > 0 && stack.ruby == layout::kNoRubyFrame)
        fail(name() + " has " + number(stack.ruby_depth) + " Ruby frames but names no Ruby frame record");
    uint32_t reference = stack.ruby;
    for (uint32_t depth = stack.ruby_depth; depth > 0; --depth) {
        const uint64_t at = in_table(reference);
        const auto frame_name = [&] { return "Ruby frame record at " + number(at) + " of " + name(); };
        if (at >= size_) fail(frame_name() + " lies outside the " + number(size_) + "-byte stack table");
        if (sizeof(layout::RubyFrameRecord) > size_ - at)
            fail(frame_name() + " runs past the end of the " + number(size_) + "-byte stack table");
        const auto record = load<layout::RubyFrameRecord>(bytes_, in_segment(reference));
        if (record.depth != depth)
            fail(frame_name() + " has depth " + number(record.depth) + ", but " +
                 (depth == stack.ruby_depth ? "the stack has " + number(depth) + " Ruby frames"
                                            : "the frame it calls has depth " + number(depth + 1)));
        if (!checked_frames_.insert(reference)) return;
        check_ruby_file(record.frame.file, [&] { return frame_name() + ": Ruby file"; });
        if (depth == 1 && record.caller != layout::kNoRubyFrame)
            fail(frame_name() + " has depth 1 but names a caller at " + number(in_table(record.caller)));
        if (depth > 1 && record.caller == layout::kNoRubyFrame)
            fail(frame_name() + " has depth " + number(depth) + " but names no caller");
        reference = record.caller;
    }
}

template <class Owner>
bool StackTableReader::check(uint32_t reference, const Owner& owner) {
    const uint64_t at = in_table(reference);
    const auto name = [&] { return owner() + "'s stack at " + number(at); };
    const StackRecordFields record = record_at(reference);
    if (record.state != layout::kReady) return false;
    if (record.native_depth > header_.max_depth)
        fail(name() + " has " + number(record.native_depth) + " native frames, more than max_depth " +
             number(header_.max_depth));
    if (record.ruby_depth > header_.max_ruby_depth)
        fail(name() + " has " + number(record.ruby_depth) + " Ruby frames, more than max_ruby_depth " +
             number(header_.max_ruby_depth));
    // Both depths are at most 64, so this cannot overflow.
    const uint64_t record_size =
        ruby_inline_ ? layout5::whole_stack_record_size(record) : layout::stack_record_size(record.native_depth);
    if (record_size > size_ - at) fail(name() + " runs past the end of the " + number(size_) + "-byte stack table");
    if (ruby_inline_) {
        const auto check_file = [&](const layout::RubyFrame& frame, uint32_t) {
            check_ruby_file(frame.file, [&] { return name() + " Ruby file"; });
        };
        layout5::for_each_ruby_frame(bytes_, in_segment(reference), record, check_file);
        inline_ruby_frames_ += record.ruby_depth;
    } else {
        check_ruby_frames(record, name);
    }
    native_frames_ += record.native_depth;
    return true;
}

void StackTableReader::check_named(const std::function<std::string(uint32_t reference)>& first_owner) {
    std::vector<uint32_t> not_ready;
    named_.for_each([&](uint32_t reference) {
        if (!check(reference, [&] { return first_owner(reference); })) not_ready.push_back(reference);
    });
    for (const uint32_t reference : not_ready) named_.erase(reference);
    named_.number_members();
    checked_frames_.number_members();
}

std::shared_ptr<const StackStore> StackTableReader::store(const DoneWithBytes& done_with) const {
    auto store = std::make_shared<StackStore>();
    store->frames.reserve(native_frames_);
    store->stacks.reserve(named_.size());
    // Sized once: the nodes point at each other.
    store->ruby.resize(ruby_inline_ ? inline_ruby_frames_ : checked_frames_.size());
    const auto location = [&](const layout::RubyFrame& frame) {
        return RubyLocation{ruby_files_.at(frame.file), frame.line};
    };
    std::size_t next_node = 0;
    const auto add_frame = [&](uint32_t reference) {
        const auto record = load<layout::RubyFrameRecord>(bytes_, in_segment(reference));
        store->ruby[next_node++].set(location(record.frame), record.caller == layout::kNoRubyFrame
                                                                 ? nullptr
                                                                 : &store->ruby[checked_frames_.rank(record.caller)]);
    };
    DistinctAddresses addresses(store->addresses);
    const auto add_stack = [&](uint32_t reference) {
        const StackRecordFields record = record_at(reference);
        const uint64_t native = native_frames_offset(reference);
        const auto first_frame = static_cast<uint32_t>(store->frames.size());
        for (uint32_t i = 0; i < record.native_depth; ++i) {
            const auto address = load<uint64_t>(bytes_, native + i * sizeof(uint64_t));
            store->frames.push_back(addresses.index_of(address));
        }
        uint32_t innermost = SiteStack::kNoRuby;
        if (record.ruby_depth > 0 && !ruby_inline_) {
            innermost = checked_frames_.rank(record.ruby);
        } else if (record.ruby_depth > 0) {
            RubyNode* nodes = &store->ruby[next_node];
            innermost = static_cast<uint32_t>(next_node);
            next_node += record.ruby_depth;
            const auto add_node = [&](const layout::RubyFrame& frame, uint32_t i) {
                nodes[i].set(location(frame), i + 1 < record.ruby_depth ? &nodes[i + 1] : nullptr);
            };
            layout5::for_each_ruby_frame(bytes_, in_segment(reference), record, add_node);
        }
        store->stacks.push_back({store.get(), first_frame, innermost, record.module_generation,
                                 static_cast<uint8_t>(record.native_depth), static_cast<uint8_t>(record.ruby_depth),
                                 record.reduced});
    };
    // Nothing below the record read next is read again.
    uint64_t given_back = 0;
    const auto give_back_below = [&](uint32_t reference) {
        constexpr uint64_t kAtOnce = uint64_t{1} << 20;
        if (!done_with || in_table(reference) - given_back < kAtOnce) return;
        done_with(bytes_.subspan(in_segment(0) + given_back, in_table(reference) - given_back));
        given_back = in_table(reference);
    };
    ReferenceSet::Cursor frames(checked_frames_), stacks(named_);
    uint32_t frame = 0, stack = 0;
    bool frames_left = frames.next(frame), stacks_left = stacks.next(stack);
    while (frames_left || stacks_left) {
        if (frames_left && (!stacks_left || frame < stack)) {
            give_back_below(frame);
            add_frame(frame);
            frames_left = frames.next(frame);
        } else {
            give_back_below(stack);
            add_stack(stack);
            stacks_left = stacks.next(stack);
        }
    }
    return store;
}

}  // namespace leakwrap::segment_parsing
