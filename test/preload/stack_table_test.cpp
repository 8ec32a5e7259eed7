// The stack table (preload/record/stack_table.cpp) and the Ruby frame tree in it
// (preload/ruby/ruby_frame_tree.cpp) on a real segment of this test process: a stack is stored once
// and found again by its key, Ruby backtraces share their outer frames' records, a reduced
// stack is counted, the last sixteenth of the table (bytes or private nodes) is kept for
// reduced stacks, a full table refuses new stacks and still finds the old ones, and of two calls
// adding one stack at once, one adds it and the other's record is abandoned, never named.
#include "stack_table.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <urcu-bp.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "config.h"
#include "guard.h"
#include "ruby_frame_tree.h"
#include "segment.h"

namespace leakwrap {
namespace {

constexpr uint32_t kNativeDepth = 16;
constexpr uint32_t kRubyDepth = 8;

// A key whose frames live in the test's own storage.
struct Stack {
    std::vector<uint64_t> frames;
    uint32_t ruby = layout::kNoRubyFrame;
    uint32_t ruby_depth = 0;
    uint32_t flags = 0;

    StackKey key() const {
        return StackKey{frames.data(), static_cast<uint32_t>(frames.size()), ruby, ruby_depth, flags};
    }
};

// The backtrace (innermost first) stored in the segment's frame tree, as the preload stores it:
// with the guard held.
uint32_t intern(const std::vector<layout::RubyFrame>& backtrace) {
    GuardScope guard;
    return intern_ruby_backtrace(backtrace.data(), static_cast<uint32_t>(backtrace.size()));
}

// The stack with this Ruby backtrace.
Stack with_ruby(Stack stack, const std::vector<layout::RubyFrame>& backtrace) {
    stack.ruby = intern(backtrace);
    EXPECT_NE(stack.ruby, layout::kNoRubyFrame);
    stack.ruby_depth = static_cast<uint32_t>(backtrace.size());
    return stack;
}

Stack native_stack(uint64_t first_frame, uint32_t depth) {
    Stack stack;
    for (uint32_t i = 0; i < depth; ++i) stack.frames.push_back(first_frame + 16 * i);
    return stack;
}

struct Found {
    uint32_t reference;
    bool added;
};

// As site_table.cpp calls it: with the guard held, inside an urcu-bp read-side section.
Found find_or_add(const Stack& stack, bool may_add = true) {
    GuardScope guard;
    urcu_bp_read_lock();
    const StackKey key = stack.key();
    const FoundStack found = find_or_add_stack(key, hash_stack_key(key), may_add);
    urcu_bp_read_unlock();
    EXPECT_EQ(found.first_site == nullptr, found.reference == layout::kNoStack);
    return Found{found.reference, found.added};
}

uint64_t stacks_used() { return g_segment.header->stacks_used; }

class StackTable : public ::testing::Test {
protected:
    // `max_sites` sizes both the table's bytes (128 per site) and its private nodes (one per
    // site), as the preload sizes them.
    void start(uint32_t max_sites) {
        GuardScope guard;
        Config config{};
        config.depth = kNativeDepth;
        config.ruby_depth = kRubyDepth;
        config.max_sites = max_sites;
        ASSERT_TRUE(create_segment(config, 0)) << "cannot create the segment in /dev/shm";
        ASSERT_TRUE(init_stack_table(max_sites));
        ASSERT_TRUE(init_ruby_frame_tree());
        ASSERT_EQ(g_segment.stacks_capacity, uint64_t{max_sites} * 128);
    }
    void SetUp() override { start(256); }
    void TearDown() override {
        GuardScope guard;
        unlink_segment();
    }
};

TEST(StackKeyHash, DependsOnTheFramesNotOnWhereTheyAreStored) {
    const Stack stack = native_stack(0x401000, 5);
    const Stack copy = stack;
    ASSERT_NE(stack.frames.data(), copy.frames.data());
    EXPECT_EQ(hash_stack_key(stack.key()), hash_stack_key(copy.key()));
}

TEST(StackKeyHash, ChangesWithAnyPartOfTheKey) {
    Stack base = native_stack(0x401000, 4);
    base.ruby = 12;  // a Ruby backtrace is named by its innermost frame's record alone
    base.ruby_depth = 2;
    const uint64_t hash = hash_stack_key(base.key());
    std::set<uint64_t> hashes{hash};

    Stack other_frame = base;
    other_frame.frames[2] += 1;
    Stack swapped = base;
    std::swap(swapped.frames[0], swapped.frames[1]);
    Stack shorter = base;
    shorter.frames.pop_back();
    Stack other_backtrace = base;
    other_backtrace.ruby = 14;
    Stack without_ruby = base;
    without_ruby.ruby = layout::kNoRubyFrame;
    without_ruby.ruby_depth = 0;
    Stack reduced = base;
    reduced.flags = layout::kStackReduced;
    for (const Stack* variant : {&other_frame, &swapped, &shorter, &other_backtrace, &without_ruby, &reduced})
        EXPECT_TRUE(hashes.insert(hash_stack_key(variant->key())).second);
}

TEST(StackKeyHash, TellsApartTheSameWordInTheNativeOrTheRubyPart) {
    Stack native;
    native.frames = {0x10};
    Stack ruby;
    ruby.ruby = 0x10;
    ruby.ruby_depth = 1;
    EXPECT_NE(hash_stack_key(native.key()), hash_stack_key(ruby.key()));
}

TEST_F(StackTable, ANewStackIsNotFoundWithoutAddingIt) {
    const Found found = find_or_add(native_stack(0x401000, 3), false);
    EXPECT_EQ(found.reference, layout::kNoStack);
    EXPECT_FALSE(found.added);
    EXPECT_EQ(stacks_used(), 0u);
}

TEST_F(StackTable, AddsAStackOnceWithItsFramesAndFindsItAgain) {
    const Stack stack = with_ruby(native_stack(0x401000, 3), {{5, 40}, {6, 41}});
    const uint64_t frames_used = stacks_used();
    EXPECT_EQ(frames_used, 2 * sizeof(layout::RubyFrameRecord));
    const Found first = find_or_add(stack);
    ASSERT_NE(first.reference, layout::kNoStack);
    EXPECT_TRUE(first.added);
    EXPECT_EQ(stacks_used(), frames_used + layout::stack_record_size(3));

    layout::StackRecord* record = stack_record(first.reference);
    EXPECT_EQ(record->state, layout::kReady);
    EXPECT_EQ(record->native_depth, 3u);
    EXPECT_EQ(record->ruby_depth, 2u);
    EXPECT_EQ(record->flags, 0u);
    EXPECT_EQ(std::memcmp(stack_frames(record), stack.frames.data(), 3 * sizeof(uint64_t)), 0);
    ASSERT_EQ(record->ruby, stack.ruby);
    const layout::RubyFrameRecord& innermost = *ruby_frame_record(record->ruby);
    EXPECT_EQ(innermost.frame.file, 5u);
    EXPECT_EQ(innermost.depth, 2u);
    const layout::RubyFrameRecord& outer = *ruby_frame_record(innermost.caller);
    EXPECT_EQ(outer.frame.file, 6u);
    EXPECT_EQ(outer.frame.line, 41u);
    EXPECT_EQ(outer.caller, layout::kNoRubyFrame);
    EXPECT_EQ(g_segment.header->reduced_stacks, 0u);

    const Stack copy = stack;  // found by content, not by the address of the frames
    for (bool may_add : {true, false}) {
        const Found again = find_or_add(copy, may_add);
        EXPECT_EQ(again.reference, first.reference);
        EXPECT_FALSE(again.added);
    }
    EXPECT_EQ(stacks_used(), frames_used + layout::stack_record_size(3));
}

TEST_F(StackTable, KeysThatDifferAnywhereAreStoredApart) {
    Stack base = with_ruby(native_stack(0x401000, 4), {{1, 2}});
    Stack other_frame = base;
    other_frame.frames[3] = 0x999;
    Stack other_line = with_ruby(base, {{1, 3}});
    const uint64_t frames_used = stacks_used();
    Stack reduced = base;
    reduced.flags = layout::kStackReduced;
    std::set<uint32_t> references;
    for (const Stack* stack : {&base, &other_frame, &other_line, &reduced}) {
        const Found found = find_or_add(*stack);
        ASSERT_TRUE(found.added);
        EXPECT_TRUE(references.insert(found.reference).second);
        EXPECT_EQ(stack_record(found.reference)->flags, stack->flags);
    }
    EXPECT_EQ(stacks_used(), frames_used + 4 * layout::stack_record_size(4));
}

TEST_F(StackTable, AReducedStackIsCountedWhenAddedOnly) {
    Stack reduced = native_stack(0x402000, 2);
    reduced.flags = layout::kStackReduced;
    EXPECT_TRUE(find_or_add(reduced).added);
    EXPECT_EQ(g_segment.header->reduced_stacks, 1u);
    EXPECT_FALSE(find_or_add(reduced).added);
    EXPECT_TRUE(find_or_add(native_stack(0x403000, 2)).added);  // not reduced
    EXPECT_EQ(g_segment.header->reduced_stacks, 1u);
}

TEST(StackTableReserve, IsTheLastSixteenthOfTheCapacity) {
    static_assert(!in_reduced_reserve(1500, 1600));
    static_assert(in_reduced_reserve(1501, 1600));
    static_assert(!in_reduced_reserve(0, 16));
    static_assert(in_reduced_reserve(16, 16));
    EXPECT_FALSE(in_reduced_reserve(240, 256));
    EXPECT_TRUE(in_reduced_reserve(241, 256));
}

// 256 sites: 32 KiB of stack bytes, 256 nodes. Deep stacks (144 bytes) run out of bytes first.
TEST_F(StackTable, NearlyFullOnceTheBytesEnterTheReserveThenFull) {
    const uint64_t capacity = g_segment.stacks_capacity;
    const uint64_t record = layout::stack_record_size(kNativeDepth);
    std::vector<std::pair<Stack, uint32_t>> added;
    bool was_nearly_full = false;
    for (uint64_t i = 0;; ++i) {
        ASSERT_LT(i, capacity / record + 1) << "the table never filled up";
        EXPECT_EQ(stack_table_nearly_full(), in_reduced_reserve(stacks_used(), capacity)) << i;
        was_nearly_full = was_nearly_full || stack_table_nearly_full();
        const Stack stack = native_stack(0x500000 + (i << 12), kNativeDepth);
        const Found found = find_or_add(stack);
        if (found.reference == layout::kNoStack) {
            EXPECT_FALSE(found.added);
            EXPECT_GT(stacks_used() + record, capacity);  // no room for one more
            break;
        }
        added.emplace_back(stack, found.reference);
    }
    EXPECT_TRUE(was_nearly_full);
    EXPECT_TRUE(stack_table_nearly_full());
    EXPECT_EQ(added.size(), capacity / record);
    // A smaller stack still fits in what is left; the table refuses only what does not.
    EXPECT_NE(find_or_add(native_stack(0x1000, 1)).reference, layout::kNoStack);
    for (const auto& [stack, reference] : added) EXPECT_EQ(find_or_add(stack, false).reference, reference);
}

// Shallow stacks (24 bytes) run out of private nodes first: 256 of them, 6 KiB of the 32.
TEST_F(StackTable, NearlyFullOnceTheNodesEnterTheReserveThenFull) {
    const uint32_t nodes = 256;
    std::vector<uint32_t> references;
    for (uint32_t i = 0; i < nodes; ++i) {
        EXPECT_EQ(stack_table_nearly_full(), in_reduced_reserve(i, nodes)) << i;
        const Found found = find_or_add(native_stack(0x600000 + i * 64, 1));
        ASSERT_TRUE(found.added) << i;
        references.push_back(found.reference);
    }
    EXPECT_TRUE(stack_table_nearly_full());
    EXPECT_FALSE(in_reduced_reserve(stacks_used(), g_segment.stacks_capacity));  // bytes remain
    const Found refused = find_or_add(native_stack(0x900000, 1));
    EXPECT_EQ(refused.reference, layout::kNoStack);
    EXPECT_FALSE(refused.added);
    for (uint32_t i = 0; i < nodes; i += 51)
        EXPECT_EQ(find_or_add(native_stack(0x600000 + i * 64, 1), false).reference, references[i]);
}

uint32_t alone(uint32_t innermost) {
    GuardScope guard;
    return innermost_ruby_frame_alone(innermost);
}

// The frames of the chain from `innermost` outward, checking each record's depth on the way.
std::vector<std::pair<uint32_t, uint32_t>> chain_of(uint32_t innermost) {
    std::vector<std::pair<uint32_t, uint32_t>> frames;
    uint32_t depth = innermost == layout::kNoRubyFrame ? 0 : ruby_frame_record(innermost)->depth;
    for (uint32_t at = innermost; at != layout::kNoRubyFrame; at = ruby_frame_record(at)->caller) {
        EXPECT_EQ(ruby_frame_record(at)->depth, depth--);
        frames.emplace_back(ruby_frame_record(at)->frame.file, ruby_frame_record(at)->frame.line);
    }
    EXPECT_EQ(depth, 0u);
    return frames;
}

TEST_F(StackTable, RubyBacktracesShareTheRecordsOfTheirCommonOuterFrames) {
    const uint32_t first = intern({{1, 10}, {2, 20}, {3, 30}});
    ASSERT_NE(first, layout::kNoRubyFrame);
    EXPECT_EQ(stacks_used(), 3 * sizeof(layout::RubyFrameRecord));
    EXPECT_EQ(chain_of(first), (std::vector<std::pair<uint32_t, uint32_t>>{{1, 10}, {2, 20}, {3, 30}}));

    const uint32_t sibling = intern({{4, 40}, {2, 20}, {3, 30}});  // one more record
    EXPECT_EQ(stacks_used(), 4 * sizeof(layout::RubyFrameRecord));
    EXPECT_EQ(ruby_frame_record(sibling)->caller, ruby_frame_record(first)->caller);
    EXPECT_EQ(intern({{1, 10}, {2, 20}, {3, 30}}), first);  // the same backtrace, no new record
    EXPECT_EQ(intern({{2, 20}, {3, 30}}), ruby_frame_record(first)->caller);
    EXPECT_EQ(stacks_used(), 4 * sizeof(layout::RubyFrameRecord));

    // The same frame called from elsewhere is another record: a record stands for its callers too.
    const uint32_t elsewhere = intern({{1, 10}, {5, 50}});
    EXPECT_NE(elsewhere, first);
    EXPECT_EQ(chain_of(elsewhere), (std::vector<std::pair<uint32_t, uint32_t>>{{1, 10}, {5, 50}}));
}

// The first private table holds 3072 records; the records found before it grew are found after.
// The table of 4096 slots (16 KiB) is replaced by one of 8192 (32 KiB): the count of leakwrap's
// private memory in the header grows by the difference, since the old table is given back.
TEST_F(StackTable, RubyFramesAreFoundAgainAfterThePrivateTableGrows) {
    start(4096);
    const uint32_t private_kib = g_segment.header->private_kib;
    std::vector<uint32_t> references;
    for (uint32_t i = 0; i < 5000; ++i) references.push_back(intern({{i, 1}, {7, 7}}));
    const uint64_t used = stacks_used();
    EXPECT_EQ(used, 5001 * sizeof(layout::RubyFrameRecord));
    for (uint32_t i = 0; i < 5000; ++i) ASSERT_EQ(intern({{i, 1}, {7, 7}}), references[i]) << i;
    EXPECT_EQ(stacks_used(), used);
    EXPECT_EQ(g_segment.header->private_kib, private_kib + 16);
}

TEST_F(StackTable, NearlyFullANewRubyBacktraceKeepsItsInnermostFrameAlone) {
    const uint32_t stored_early = intern({{1, 10}, {2, 20}, {3, 30}});
    for (uint64_t i = 0; !stack_table_nearly_full(); ++i)
        ASSERT_NE(find_or_add(native_stack(0x500000 + (i << 12), kNativeDepth)).reference, layout::kNoStack);
    EXPECT_EQ(intern({{1, 10}, {2, 20}, {3, 30}}), stored_early);  // still found whole

    const uint32_t late = intern({{8, 80}, {2, 20}, {3, 30}});
    EXPECT_EQ(chain_of(late), (std::vector<std::pair<uint32_t, uint32_t>>{{8, 80}}));
    EXPECT_EQ(intern({{8, 80}, {9, 90}}), late);  // shared by every backtrace ending there
    EXPECT_EQ(alone(late), late);
}

TEST_F(StackTable, TheInnermostFrameAloneIsARecordOfDepthOne) {
    const uint32_t full = intern({{1, 10}, {2, 20}});
    const uint32_t innermost = alone(full);
    EXPECT_NE(innermost, full);
    EXPECT_EQ(chain_of(innermost), (std::vector<std::pair<uint32_t, uint32_t>>{{1, 10}}));
    EXPECT_EQ(alone(full), innermost);
    EXPECT_EQ(alone(layout::kNoRubyFrame), layout::kNoRubyFrame);
}

// A race lost, made to happen on one thread. find_or_add_stack looks the key up, then claims
// the record's bytes, and the first claim of a 64 KiB chunk backs it with posix_fallocate
// before the record is added to the index: the test's own posix_fallocate (below, which the
// preload's objects linked into this program call) adds the same stack right there, as another
// thread could, so the outer call loses the race it had already entered.
std::function<void()> g_inside_fallocate;

TEST_F(StackTable, AStackAddedMeanwhileWinsAndTheLosersRecordIsAbandoned) {
    Stack stack = native_stack(0x700000, 2);
    stack.flags = layout::kStackReduced;
    Found winner{};
    g_inside_fallocate = [&] { winner = find_or_add(stack); };
    const Found loser = find_or_add(stack);
    ASSERT_FALSE(g_inside_fallocate) << "the claim did not back a new chunk";
    ASSERT_TRUE(winner.added);
    EXPECT_FALSE(loser.added);
    EXPECT_EQ(loser.reference, winner.reference);

    // The loser claimed the first record, the winner the next: both are in the table's bytes.
    const uint64_t record = layout::stack_record_size(2);
    EXPECT_EQ(stacks_used(), 2 * record);
    EXPECT_EQ(winner.reference, record / layout::kStackAlignment);
    EXPECT_EQ(stack_record(0)->state, layout::kAbandoned);
    EXPECT_EQ(stack_record(winner.reference)->state, layout::kReady);
    EXPECT_EQ(g_segment.header->reduced_stacks, 1u);  // counted by the one that added it
    EXPECT_EQ(find_or_add(stack, false).reference, winner.reference);
}

}  // namespace
}  // namespace leakwrap

// The preload's os::back_segment_bytes calls this one: it runs the armed test step once, then
// glibc's.
extern "C" int posix_fallocate(int fd, off_t offset, off_t length) {
    if (std::function<void()> step = std::exchange(leakwrap::g_inside_fallocate, nullptr)) step();
    static const auto real = reinterpret_cast<int (*)(int, off_t, off_t)>(dlsym(RTLD_NEXT, "posix_fallocate"));
    return real(fd, offset, length);
}
