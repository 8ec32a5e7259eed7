// Walking a stack by learned frame sizes (preload/frame_sizes.cpp, stack_capture.cpp) in this
// test process: the table's rules for what it learns, and real stacks of this program's own
// functions, first unknown, then learned by one slow unwind and walked to the same frames as
// libunwind finds, from the same slots, a frame that allocates on the stack dynamically through
// its frame pointer; and stacks learned by the walk itself, a libunwind step a frame it does not
// know.
#include "frame_sizes.h"

#include <alloca.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "caller.h"
#include "guard.h"
#include "stack_capture.h"
#include "thread_stacks.h"

namespace leakwrap {
namespace {

class FrameSizes : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(init_frame_sizes());
        forget_frame_sizes();
    }
};

TEST_F(FrameSizes, KeepsASizeSeenAgainAndGivesUpOnTwoSizes) {
    const uintptr_t address = 0x7f0000401234;
    EXPECT_EQ(frame_size(address), kUnknownFrame);
    learn_frame_size(address, kSeenFrame);
    EXPECT_EQ(frame_size(address), kSeenFrame);
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), 48u);
    learn_frame_size(address, kSeenFrame);  // says nothing new
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), 48u);
    learn_frame_size(address, 64);  // a frame of two sizes cannot be walked by size
    EXPECT_EQ(frame_size(address), kUnwalkableFrame);
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), kUnwalkableFrame);
}

TEST_F(FrameSizes, RefusesSizesNoFrameHas) {
    learn_frame_size(0x401000, kMaxFrameSize + 8);
    EXPECT_EQ(frame_size(0x401000), kUnwalkableFrame);
    learn_frame_size(0x402000, kFramePointerFrame + 1);  // neither a marker nor a size
    EXPECT_EQ(frame_size(0x402000), kUnwalkableFrame);
    learn_frame_size(0x402100, sized_frame(40, kMaxSavedRbpSlot));  // saved rbp at CFA - 64
    EXPECT_EQ(frame_bytes(frame_size(0x402100)), 40u);
    EXPECT_EQ(saved_rbp_slot(frame_size(0x402100)), kMaxSavedRbpSlot);
    learn_frame_size(0x403000, kOutermostFrame);
    EXPECT_EQ(frame_size(0x403000), kOutermostFrame);
}

TEST_F(FrameSizes, ForgetsEverythingWhenAModuleIsUnloaded) {
    for (uintptr_t address = 0x500000; address < 0x500000 + 1000 * 16; address += 16)
        learn_frame_size(address, 32);
    EXPECT_EQ(frame_size(0x500000 + 500 * 16), 32u);
    forget_frame_sizes();
    EXPECT_EQ(frame_size(0x500000 + 500 * 16), kUnknownFrame);
    EXPECT_TRUE(can_learn_frame_sizes());
}

// What each stack below found, from inside the "allocator" (the innermost function).
struct Found {
    bool first_walk_learns;  // set by the test: the first walk learns what it does not know
    StackWalk first_walk;
    CapturedStack learned;
    StackWalk second_walk;
    CapturedStack walked;
};

constexpr uint32_t kDepth = 6;

// Stands for malloc: the caller context names the function that called it, where both the walk
// and the slow unwind start. The second walk learns nothing: it walks by what is known.
__attribute__((noinline)) void allocator(Found* found) {
    const CallerContext caller = LEAKWRAP_CALLER();
    GuardScope guard;
    found->first_walk =
        walk_stack_by_frame_sizes(caller, kDepth, nullptr, found->first_walk_learns, &found->walked, nullptr);
    capture_stack_with_slots(caller, kDepth, &found->learned);
    found->second_walk = walk_stack_by_frame_sizes(caller, kDepth, nullptr, false, &found->walked, nullptr);
    asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

__attribute__((noinline)) void inner(Found* found) {
    allocator(found);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void middle(Found* found) {
    inner(found);
    asm volatile("" ::: "memory");
}

// Uses rbp as a general register, as optimized code may: it saves its caller's rbp, and the
// allocator sees garbage in the register.
__attribute__((noinline)) void inner_using_rbp(Found* found) {
    asm volatile("mov $0x1234, %%rbp" ::: "rbp");
    allocator(found);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void with_dynamic_frame(Found* found, unsigned bytes, bool rbp_used_inside) {
    volatile char* scratch = static_cast<char*>(alloca(bytes));
    scratch[0] = 1;
    if (rbp_used_inside)
        inner_using_rbp(found);
    else
        inner(found);
    asm volatile("" ::: "memory");
}

// dynamic_bytes: 0 for a stack of fixed-size frames, else what a frame on it allocates with alloca.
__attribute__((noinline)) void outer(Found* found, unsigned dynamic_bytes, bool rbp_used_inside = false) {
    if (dynamic_bytes != 0)
        with_dynamic_frame(found, dynamic_bytes, rbp_used_inside);
    else
        middle(found);
    asm volatile("" ::: "memory");
}

// The second walk found the frames the slow unwind found, read from the same slots: the
// call-site cache takes a walk's slots as it takes libunwind's.
void expect_walked_as_unwound(const Found& found) {
    ASSERT_EQ(found.second_walk, StackWalk::kWalked);
    ASSERT_EQ(found.learned.depth, kDepth);
    ASSERT_EQ(found.walked.depth, kDepth);
    ASSERT_TRUE(found.learned.slots_known);
    ASSERT_TRUE(found.walked.slots_known);
    for (uint32_t i = 0; i < kDepth; ++i) {
        EXPECT_EQ(found.walked.frames[i], found.learned.frames[i]) << i;
        EXPECT_EQ(found.walked.slots[i], found.learned.slots[i]) << i;
    }
}

TEST_F(FrameSizes, AStackOnceUnwoundSlowlyIsWalkedToTheSameFrames) {
    record_thread_stack_bounds();
    Found calls[2]{};
    volatile int count = 2;  // one call site, not unrolled: the same return addresses twice
    for (int i = 0; i < count; ++i) outer(&calls[i], 0);
    const Found& found = calls[0];
    EXPECT_EQ(found.first_walk, StackWalk::kNeedsLearning);
    expect_walked_as_unwound(found);
    EXPECT_EQ(calls[1].first_walk, StackWalk::kWalked);  // no slow unwind needed any more
}

// Its size differs from call to call: it is walked through its frame pointer, not by a size;
// with rbp_used_inside, the frame pointer is found where the frame inside saved it.
class FrameSizesDynamic : public FrameSizes, public ::testing::WithParamInterface<bool> {};

TEST_P(FrameSizesDynamic, AFrameThatAllocatesOnTheStackIsWalkedThroughItsFramePointer) {
    record_thread_stack_bounds();
    Found calls[3]{};
    const unsigned dynamic_bytes[3] = {64, 4096 + 48, 512};
    volatile int count = 3;  // one call site, not unrolled: the same return addresses each time
    for (int i = 0; i < count; ++i) outer(&calls[i], dynamic_bytes[i], GetParam());
    EXPECT_EQ(calls[0].first_walk, StackWalk::kNeedsLearning);
    for (const Found& found : calls) expect_walked_as_unwound(found);
    for (int i = 1; i < 3; ++i) EXPECT_EQ(calls[i].first_walk, StackWalk::kWalked) << i;
    // The second frame walked is with_dynamic_frame's (where inner returns to).
    EXPECT_EQ(frame_size(calls[0].walked.frames[1]), kFramePointerFrame);
    if (GetParam()) {
        EXPECT_NE(saved_rbp_slot(frame_size(calls[0].walked.frames[0])), 0u);
    }
}

// A walk that may learn steps libunwind out of each frame it does not know, from the stack
// pointer and rbp it found there, and goes on: the frames and slots it finds are libunwind's,
// whether the frames are sized, use a frame pointer, or reach it through a saved rbp.
TEST_P(FrameSizesDynamic, AWalkLearnsTheFramesItDoesNotKnowOnItsWay) {
    record_thread_stack_bounds();
    for (const unsigned dynamic_bytes : {0u, 64u, 4096u + 48}) {
        forget_frame_sizes();
        Found found{};
        found.first_walk_learns = true;
        outer(&found, dynamic_bytes, GetParam());
        EXPECT_EQ(found.first_walk, StackWalk::kWalked) << dynamic_bytes;
        expect_walked_as_unwound(found);
    }
}

INSTANTIATE_TEST_SUITE_P(RbpKeptOrUsedInside, FrameSizesDynamic, ::testing::Bool());

}  // namespace
}  // namespace leakwrap
