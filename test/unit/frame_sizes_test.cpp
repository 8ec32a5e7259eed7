// Walking a stack by learned frame sizes (preload/frame_sizes.cpp, stack_capture.cpp) in this
// test process: the table's rules for what it learns, and real stacks of this program's own
// functions, first unknown, then learned by one slow unwind and walked to the same frames as
// libunwind finds, while a frame that allocates on the stack dynamically is never walked.
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
    learn_frame_size(0x402000, 44);  // not a multiple of 8
    EXPECT_EQ(frame_size(0x402000), kUnwalkableFrame);
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
    StackWalk first_walk;
    CapturedStack learned;
    StackWalk second_walk;
    CapturedStack walked;
};

constexpr uint32_t kDepth = 6;

// Stands for malloc: the caller context names the function that called it. The slow unwind
// starts one frame further in, here: in this program no frame is leakwrap's own to leave out.
__attribute__((noinline)) void allocator(Found* found) {
    const CallerContext caller = LEAKWRAP_CALLER();
    GuardScope guard;
    found->first_walk = walk_stack_by_frame_sizes(caller, kDepth, &found->walked);
    capture_stack_with_slots(caller, kDepth + 1, &found->learned);
    found->second_walk = walk_stack_by_frame_sizes(caller, kDepth, &found->walked);
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

__attribute__((noinline)) void with_dynamic_frame(Found* found, unsigned bytes) {
    volatile char* scratch = static_cast<char*>(alloca(bytes));
    scratch[0] = 1;
    inner(found);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void outer(Found* found, bool dynamic) {
    if (dynamic)
        with_dynamic_frame(found, 64 + static_cast<unsigned>(reinterpret_cast<uintptr_t>(found) % 64));
    else
        middle(found);
    asm volatile("" ::: "memory");
}

TEST_F(FrameSizes, AStackOnceUnwoundSlowlyIsWalkedToTheSameFrames) {
    record_thread_stack_bounds();
    Found calls[2]{};
    volatile int count = 2;  // one call site, not unrolled: the same return addresses twice
    for (int i = 0; i < count; ++i) outer(&calls[i], false);
    const Found& found = calls[0];
    EXPECT_EQ(found.first_walk, StackWalk::kNeedsLearning);
    ASSERT_EQ(found.second_walk, StackWalk::kWalked);
    ASSERT_EQ(found.learned.depth, kDepth + 1);
    ASSERT_EQ(found.walked.depth, kDepth);
    for (uint32_t i = 0; i < kDepth; ++i) EXPECT_EQ(found.walked.frames[i], found.learned.frames[i + 1]) << i;
    EXPECT_EQ(calls[1].first_walk, StackWalk::kWalked);  // no slow unwind needed any more
}

TEST_F(FrameSizes, AFrameThatAllocatesOnTheStackIsNeverWalked) {
    record_thread_stack_bounds();
    Found found{};
    outer(&found, true);
    EXPECT_EQ(found.first_walk, StackWalk::kNeedsLearning);
    EXPECT_EQ(found.second_walk, StackWalk::kNotWalkable);
    ASSERT_EQ(found.learned.depth, kDepth + 1);  // the slow unwind went through it
}

}  // namespace
}  // namespace leakwrap
