// Native call stack of the allocating thread: walked by the frames' rules learned from the
// modules' unwind tables, or unwound by libunwind where they cannot be walked.
#pragma once

#include <cstdint>

#include "caller.h"
#include "code_range.h"
#include "leakwrap/segment_layout.h"

namespace leakwrap {

// Once, during initialisation: libunwind's per-thread caches, and the address range of
// libleakwrap.so itself, whose frames are left out of every stack.
void init_stack_capture();

// The address lies in libleakwrap.so, whose code includes the libstdc++ linked into it.
bool is_own_frame(uintptr_t address);

// A captured stack: return addresses innermost first (frames[0] is the function that called
// malloc), and, where known, the stack address each one was read from (its slot).
struct CapturedStack {
    uint64_t frames[layout::kMaxDepth];
    uintptr_t slots[layout::kMaxDepth];
    uint32_t depth;
    bool slots_known;  // false after libunwind's fast unwind, or one through a signal frame
};

// Where a walk may end before max_depth (site_table.cpp's cut below the Ruby VM): at the first
// frame inside `code` that follows a frame outside it, or after `inner_frames` frames at the
// inner end that are all inside it. The frames found then decide where the stack is cut.
struct CodeBoundary {
    CodeRange code;
    uint32_t inner_frames;
};

// Walks from the caller of the interposed function by the frames' learned rules (frame_sizes.h),
// up to max_depth frames, or to `stop` (may be null): a table lookup and a load or two a frame.
// Each return address is read from its slot, so the slots are known. A frame not known yet is
// learned on the way from its module's unwind table, if `may_learn` and learning pays for the
// thread (a program whose stacks keep crossing frames that cannot be walked by size stops
// learning). Not kWalked when a frame on the way is not known (kNeedsLearning) or not walkable,
// or when the caller is not on the thread's own stack; `out` then holds the frames found up to
// the one the walk could not step out of. `cut` (may be null) tells where `stop`
// ended the walk: the depth up to and including the frame that entered its code again, 1 when
// the inner frames inside it ended it, 0 when it did not.
enum class StackWalk { kWalked, kNeedsLearning, kNotWalkable };
StackWalk walk_stack_by_frame_sizes(const CallerContext& caller, uint32_t max_depth, const CodeBoundary* stop,
                                    bool may_learn, CapturedStack* out, uint32_t* cut);

// walk_stack_by_frame_sizes(), counted among the thread's walks when it walked; when it did not,
// the caller captures the stack otherwise (capture_stack_quickly), which counts it.
bool try_walking_stack(const CallerContext& caller, uint32_t max_depth, const CodeBoundary& stop, CapturedStack* out,
                       uint32_t* cut);

// The stack from the caller, up to max_depth frames, the cheapest way: walked by frame sizes
// (learning the frames it does not know while learning pays), else unwound by libunwind: with
// its slots if `slots_wanted` (the slow unwind), else fast, without them.
void capture_stack_quickly(const CallerContext& caller, uint32_t max_depth, bool slots_wanted, CapturedStack* out);

// Unwinds from the caller of the interposed function, up to max_depth frames, fast; the slots
// stay unknown. These two enter libunwind only in a fork-fenced section (fork_fence.h): turned
// away, they record the frames that the frame sizes learned so far reach, with slots unknown.
void capture_stack(const CallerContext& caller, uint32_t max_depth, CapturedStack* out);

// The same frames and their slots (unless a signal frame crossed), at about a hundred times the
// cost: for the stacks the call-site cache will remember that cannot be walked.
void capture_stack_with_slots(const CallerContext& caller, uint32_t max_depth, CapturedStack* out);

}  // namespace leakwrap
