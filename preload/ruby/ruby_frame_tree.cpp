#include "ruby_frame_tree.h"

#include <atomic>

#include "debug_check.h"
#include "guard.h"
#include "os.h"
#include "private_memory.h"
#include "segment.h"
#include "stack_table.h"

namespace leakwrap {
namespace {

using layout::kNoRubyFrame;
using layout::RubyFrame;
using layout::RubyFrameRecord;

// Linear probing over slots that hold a record's reference + 1, so that 0, what fresh pages
// hold, is an empty slot. Invariants: at most three quarters of the slots are used, so a probe
// always meets an empty slot; a table is replaced only by a larger one it has filled completely,
// through one pointer, so a fork at any moment leaves the child a whole table (its entries may
// name records the child's segment does not hold: they never match, see same_record).
struct SlotTable {
    uint32_t capacity;  // a power of two
    uint32_t used;
    uint32_t* slots() { return reinterpret_cast<uint32_t*>(this + 1); }
};
static_assert(sizeof(SlotTable) == 8);

// 16 KiB to start; the Rails example's boot (55K records) ends at 128K slots, 512 KiB.
constexpr uint32_t kFirstSlots = 4096;

constinit SlotTable* g_table = nullptr;
constinit std::atomic_flag g_busy = ATOMIC_FLAG_INIT;

uint64_t table_bytes(uint32_t capacity) { return sizeof(SlotTable) + sizeof(uint32_t) * uint64_t{capacity}; }

SlotTable* new_table(uint32_t capacity) {
    void* memory = os::reserve_private(table_bytes(capacity));
    if (memory == nullptr) return nullptr;
    // Its slots are filled at random: counted whole, until grow() gives it back.
    count_private_bytes(static_cast<int64_t>(table_bytes(capacity)));
    auto* table = static_cast<SlotTable*>(memory);
    table->capacity = capacity;
    return table;
}

uint64_t hash_of(RubyFrame frame, uint32_t caller) {
    uint64_t h = ((uint64_t{frame.file} << 32) | frame.line) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ caller) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

// The depth is implied by the caller, and compared anyway: a child forked while its parent added
// records may hold slots naming bytes its segment reuses for other records.
bool same_record(const RubyFrameRecord& record, RubyFrame frame, uint32_t caller, uint32_t depth) {
    return record.frame.file == frame.file && record.frame.line == frame.line && record.caller == caller &&
           record.depth == depth;
}

// The slot holding the record of (frame, caller), or the empty slot where it would go.
uint32_t* slot_for(SlotTable* table, RubyFrame frame, uint32_t caller, uint32_t depth) {
    const uint32_t mask = table->capacity - 1;
    for (uint64_t i = hash_of(frame, caller) & mask;; i = (i + 1) & mask) {
        uint32_t* slot = &table->slots()[i];
        if (*slot == 0 || same_record(*ruby_frame_record(*slot - 1), frame, caller, depth)) return slot;
    }
}

bool grow() {
    SlotTable* bigger = new_table(g_table->capacity * 2);
    if (bigger == nullptr) return false;
    for (uint32_t i = 0; i < g_table->capacity; ++i) {
        const uint32_t held = g_table->slots()[i];
        if (held == 0) continue;
        const RubyFrameRecord& record = *ruby_frame_record(held - 1);
        *slot_for(bigger, record.frame, record.caller, record.depth) = held;
    }
    bigger->used = g_table->used;
    SlotTable* old = g_table;
    g_table = bigger;
    const uint64_t old_bytes = table_bytes(old->capacity);
    os::unmap(old, old_bytes);
    count_private_bytes(-static_cast<int64_t>(old_bytes));
    return true;
}

// The record of `frame` called from `caller` (`depth` frames from it outward), added if missing
// and `may_add`; kNoRubyFrame if not there and not added. Called with g_busy held.
uint32_t find_or_add(RubyFrame frame, uint32_t caller, uint32_t depth, bool may_add) {
    uint32_t* slot = slot_for(g_table, frame, caller, depth);
    if (*slot != 0) return *slot - 1;
    if (!may_add) return kNoRubyFrame;
    if ((uint64_t{g_table->used} + 1) * 4 > uint64_t{g_table->capacity} * 3) {
        if (!grow()) return kNoRubyFrame;
        slot = slot_for(g_table, frame, caller, depth);
    }
    const uint64_t offset = claim_stack_bytes(sizeof(RubyFrameRecord));
    if (offset == UINT64_MAX) return kNoRubyFrame;
    const auto reference = static_cast<uint32_t>(offset / layout::kStackAlignment);
    *ruby_frame_record(reference) = RubyFrameRecord{frame, caller, depth};
    *slot = reference + 1;
    ++g_table->used;
    return reference;
}

}  // namespace

bool init_ruby_frame_tree() {
    g_table = new_table(kFirstSlots);
    g_busy.clear();
    return g_table != nullptr;
}

uint32_t intern_ruby_backtrace(const RubyFrame* frames, uint32_t depth) {
    LEAKWRAP_CHECK(inside_leakwrap() && depth >= 1 && depth <= layout::kMaxRubyDepth);
    if (g_table == nullptr || g_busy.test_and_set(std::memory_order_acquire)) return kNoRubyFrame;
    const bool may_add = !stack_table_nearly_full();
    uint32_t innermost = kNoRubyFrame;
    for (uint32_t i = depth; i-- > 0;) {
        innermost = find_or_add(frames[i], innermost, depth - i, may_add);
        if (innermost == kNoRubyFrame) break;
    }
    if (innermost == kNoRubyFrame && !may_add) innermost = find_or_add(frames[0], kNoRubyFrame, 1, true);
    g_busy.clear(std::memory_order_release);
    return innermost;
}

uint32_t innermost_ruby_frame_alone(uint32_t innermost) {
    if (innermost == kNoRubyFrame) return kNoRubyFrame;
    const RubyFrame frame = ruby_frame_record(innermost)->frame;
    return intern_ruby_backtrace(&frame, 1);
}

void reset_ruby_frame_tree_after_fork() { g_busy.clear(); }

}  // namespace leakwrap
