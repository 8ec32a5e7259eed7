#include "stack_capture.h"

#include <ucontext.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <atomic>

#include "code_range.h"
#include "debug_check.h"
#include "frame_sizes.h"
#include "guard.h"
#include "thread_state.h"

namespace leakwrap {
namespace {

constinit CodeRange g_own_code{};

// Frames of leakwrap on a stack: at the inner end a handful, the same few for every call from
// the same entry point, never more than kMaxOwnFrames in all. The most seen at the inner end is
// what the next unwind asks for on top of the frames wanted: a frame asked for and not needed
// costs as much as one needed.
constexpr int kMaxOwnFrames = 16;
constinit std::atomic<int> g_inner_own_frames{0};

uintptr_t register_value(unw_cursor_t* cursor, unw_regnum_t reg) {
    unw_word_t value = 0;
    unw_get_reg(cursor, reg, &value);
    return value;
}

// Where libunwind found the caller's rbp after stepping out of a frame; 0 if not in memory.
uintptr_t saved_rbp_address(unw_cursor_t* cursor) {
    unw_save_loc_t location{};
    if (unw_get_save_loc(cursor, UNW_X86_64_RBP, &location) != 0 || location.type != UNW_SLT_MEMORY)
        return 0;
    return location.u.addr;
}

// Whether the cursor's frame has an entry in a module's unwind table (an FDE). libunwind steps
// out of a frame without one (JIT code, V8's builtins in node) by guessing from the registers,
// differently from one unwind to another (its fast unw_backtrace and a cursor made from a walk's
// registers took node's for a frame of 16 bytes, and lost the stack): no rule is learned for it.
bool has_unwind_table_entry(unw_cursor_t* cursor) {
    unw_proc_info_t procedure;
    return unw_get_proc_info(cursor, &procedure) == 0 && procedure.format == UNW_INFO_FORMAT_TABLE;
}

// How a slow unwind walked each frame, frame by frame (see frame_sizes.h).
class FrameSizeLearner {
public:
    // The unwind has reached the frame of `ip`; `after_signal`: the frame inside it was a signal
    // frame, so `ip` is where the signal struck, not a return address.
    void at(unw_cursor_t* cursor, uintptr_t ip, bool after_signal) {
        ip_ = after_signal ? 0 : ip;
        stack_pointer_ = register_value(cursor, UNW_REG_SP);
        frame_pointer_ = register_value(cursor, UNW_X86_64_RBP);
        signal_ = unw_is_signal_frame(cursor) > 0;
        described_ = ip_ != 0 && has_unwind_table_entry(cursor);
    }
    bool signal() const { return signal_; }
    uintptr_t stack_pointer() const { return stack_pointer_; }
    // The unwind stepped from the frame at() saw; `stepped` is unw_step's result.
    void stepped(unw_cursor_t* cursor, int stepped) {
        if (ip_ == 0) return;
        if (stepped < 0 || signal_ || !described_) return learn_frame_size(ip_, kUnwalkableFrame);
        if (stepped == 0) return learn_frame_size(ip_, kOutermostFrame);
        const uintptr_t caller_stack_pointer = register_value(cursor, UNW_REG_SP);  // the CFA
        if (frame_pointer_ + 16 == caller_stack_pointer) return learn_frame_size(ip_, kFramePointerFrame);
        // A size's low three bits hold the saved rbp's slot (frame_sizes.h): x86_64 frames are
        // whole words, and one that is not is not walked.
        if (caller_stack_pointer <= stack_pointer_ || caller_stack_pointer - stack_pointer_ > kMaxFrameSize ||
            (caller_stack_pointer - stack_pointer_) % 8 != 0)
            return learn_frame_size(ip_, kUnwalkableFrame);
        // libunwind names where the caller's rbp came from; within this frame, this frame saved it
        // (a slot below, in a frame further in, says the register kept its value through this one).
        uint32_t slot = 0;
        const uintptr_t saved = saved_rbp_address(cursor);
        if (saved >= stack_pointer_ && saved < caller_stack_pointer) {
            const uintptr_t below_return_address = caller_stack_pointer - sizeof(uint64_t) - saved;
            if (below_return_address % 8 != 0 || below_return_address / 8 == 0 ||
                below_return_address / 8 > kMaxSavedRbpSlot)
                return learn_frame_size(ip_, kUnwalkableFrame);
            slot = static_cast<uint32_t>(below_return_address / 8);
        }
        learn_frame_size(ip_, sized_frame(static_cast<uint32_t>(caller_stack_pointer - stack_pointer_), slot));
    }
    // The unwind stopped at the frame at() saw without stepping from it.
    void stopped() const {
        if (ip_ != 0) learn_frame_size(ip_, kSeenFrame);
    }

private:
    uintptr_t ip_ = 0;
    uintptr_t stack_pointer_ = 0;
    uintptr_t frame_pointer_ = 0;
    bool signal_ = false;
    bool described_ = false;
};

// A cursor in the frame of `ip`, from the registers that frame had at its call: rip, rsp and
// rbp. The other callee-saved registers are this frame's, not that one's; no frame at a call
// site finds its caller through them (its CFA follows from rsp or rbp), and nothing here reads
// them.
bool init_cursor_at(uintptr_t ip, uintptr_t stack_pointer, uintptr_t frame_pointer, unw_context_t* context,
                    unw_cursor_t* cursor) {
    if (unw_getcontext(context) != 0) return false;
    context->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(ip);
    context->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(stack_pointer);
    context->uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(frame_pointer);
    return unw_init_local(cursor, context) == 0;
}

// A thread's first kFreeLearnedFrames frames learned are free; after that each needs this many
// stacks walked, and the thread's stacks must mostly be walkable: a program whose stacks keep
// crossing frames that only libunwind can unwind gains nothing from learning more. A frame is
// learned once in the life of the process, so what this bounds is a program that keeps making
// code (a JIT, modules loaded and unloaded).
constexpr uint64_t kFreeLearnedFrames = 4096;
constexpr uint64_t kWalksPerLearnedFrame = 8;
constexpr uint64_t kWalksPerUnwalkableStack = 4;

bool learning_pays(const StackWalkCounts& counts) {
    if (counts.learned < kFreeLearnedFrames) return true;
    return counts.learned * kWalksPerLearnedFrame < counts.walked &&
           counts.unwalkable * kWalksPerUnwalkableStack < counts.walked;
}

// The rule of the frame of `ip` (its stack pointer and rbp as a walk found them), learned now by
// one libunwind step out of it if learning pays; kUnknownFrame if it does not. A walk thus pays
// a step for each frame it must step out of and does not know, not an unwind of the whole stack.
__attribute__((noinline, cold)) uint32_t learn_frame_now(uintptr_t ip, uintptr_t stack_pointer,
                                                         uintptr_t frame_pointer) {
    StackWalkCounts& counts = t_thread.stack_walks;
    if (!can_learn_frame_sizes() || !learning_pays(counts)) return kUnknownFrame;
    unw_context_t context;
    unw_cursor_t cursor;
    if (!init_cursor_at(ip, stack_pointer, frame_pointer, &context, &cursor)) return kUnknownFrame;
    ++counts.learned;
    FrameSizeLearner learner;
    learner.at(&cursor, ip, false);
    learner.stepped(&cursor, unw_step(&cursor));
    return frame_size(ip);
}

#if defined(LEAKWRAP_DEBUG) && LEAKWRAP_DEBUG
// A walk by frame sizes finds what libunwind finds from the caller's frame on.
bool same_as_libunwind(const CapturedStack& walked) {
    void* addresses[layout::kMaxDepth + kMaxOwnFrames];
    int found = unw_backtrace(addresses, static_cast<int>(layout::kMaxDepth + kMaxOwnFrames));
    int next = 0;
    while (next < found && reinterpret_cast<uintptr_t>(addresses[next]) != walked.frames[0]) ++next;
    for (uint32_t depth = 0; depth < walked.depth; ++next) {
        if (next >= found) return false;
        auto ip = reinterpret_cast<uintptr_t>(addresses[next]);
        if (!is_own_frame(ip) && ip != walked.frames[depth++]) return false;
    }
    return true;
}
#endif

}  // namespace

StackWalk walk_stack_by_frame_sizes(const CallerContext& caller, uint32_t max_depth, const CodeBoundary* stop,
                                    bool may_learn, CapturedStack* out, uint32_t* cut) {
    LEAKWRAP_CHECK(inside_leakwrap() && max_depth <= layout::kMaxDepth && max_depth > 0);
    const StackBounds bounds = t_thread.stack_bounds;
    uintptr_t stack_pointer = caller.stack_pointer;
    if (bounds.high == 0 || stack_pointer < bounds.low || stack_pointer >= bounds.high)
        return StackWalk::kNotWalkable;
    const CodeRange own = g_own_code;
    uintptr_t ip = caller.return_address;
    // rbp as each frame had it at its call: a frame either keeps it, or saved it (sized frames)
    // or set it (frame-pointer frames), so the slot to restore it from is known.
    uintptr_t frame_pointer = caller.frame_pointer;
    uint32_t depth = 0;
    // For `stop`: frames inside its code at the inner end, and whether one outside came since.
    uint32_t inner_frames_inside = 0;
    bool outside_seen = false;
    if (cut != nullptr) *cut = 0;
    // Every frame costs a lookup and a few compares: the markers, rare past a thread's first
    // stacks, are told apart only off the path of a sized frame.
    for (;;) {
        uint32_t value = frame_size(ip);
        // leakwrap's wrappers of ruby_init/ruby_setup sit in the middle of some stacks.
        if (__builtin_expect(!own.contains(ip), 1)) {
            out->slots[depth] = stack_pointer - sizeof(uint64_t);  // where `ip` was read from
            out->frames[depth++] = ip;
            if (depth == max_depth) break;
            if (stop != nullptr) {
                const bool inside = stop->code.contains(ip);
                if (outside_seen ? inside : inside && ++inner_frames_inside == stop->inner_frames) {
                    if (cut != nullptr) *cut = outside_seen ? depth : 1;
                    break;
                }
                outside_seen = outside_seen || !inside;
            }
        }
        // A frame the walk must step out of and does not know (or saw only as the last frame
        // of an unwind) is learned now: a frame that only ends the walk costs nothing.
        if (__builtin_expect(!is_sized_frame(value), 0) && value != kFramePointerFrame && value != kOutermostFrame) {
            if (value != kUnwalkableFrame && may_learn) value = learn_frame_now(ip, stack_pointer, frame_pointer);
            if (value == kUnknownFrame || value == kSeenFrame)
                return can_learn_frame_sizes() ? StackWalk::kNeedsLearning : StackWalk::kNotWalkable;
            if (value == kUnwalkableFrame) return StackWalk::kNotWalkable;
        }
        uintptr_t caller_stack_pointer;
        if (__builtin_expect(is_sized_frame(value), 1)) {
            caller_stack_pointer = stack_pointer + frame_bytes(value);
            if (caller_stack_pointer > bounds.high) return StackWalk::kNotWalkable;
            if (const uint32_t slot = saved_rbp_slot(value))
                frame_pointer = *reinterpret_cast<const uint64_t*>(caller_stack_pointer - 8 - 8 * slot);
        } else if (value == kFramePointerFrame) {
            // The frame lies above its callee's; rbp that is not is not this frame's.
            if (frame_pointer < stack_pointer || frame_pointer % 8 != 0 || frame_pointer > bounds.high - 16)
                return StackWalk::kNotWalkable;
            caller_stack_pointer = frame_pointer + 16;
            frame_pointer = *reinterpret_cast<const uint64_t*>(frame_pointer);
        } else {
            LEAKWRAP_CHECK(value == kOutermostFrame);
            break;
        }
        stack_pointer = caller_stack_pointer;
        ip = *reinterpret_cast<const uint64_t*>(stack_pointer - sizeof(uint64_t));
    }
    out->depth = depth;
    out->slots_known = true;
#if defined(LEAKWRAP_DEBUG) && LEAKWRAP_DEBUG
    LEAKWRAP_CHECK(same_as_libunwind(*out));
#endif
    return StackWalk::kWalked;
}

bool try_walking_stack(const CallerContext& caller, uint32_t max_depth, const CodeBoundary& stop, CapturedStack* out,
                       uint32_t* cut) {
    if (walk_stack_by_frame_sizes(caller, max_depth, &stop, true, out, cut) != StackWalk::kWalked) return false;
    ++t_thread.stack_walks.walked;
    return true;
}

void capture_stack_quickly(const CallerContext& caller, uint32_t max_depth, bool slots_wanted, CapturedStack* out) {
    StackWalkCounts& counts = t_thread.stack_walks;
    StackWalk walk = walk_stack_by_frame_sizes(caller, max_depth, nullptr, true, out, nullptr);
    if (walk == StackWalk::kWalked) {
        ++counts.walked;
        return;
    }
    if (walk == StackWalk::kNotWalkable) ++counts.unwalkable;
    if (slots_wanted)
        capture_stack_with_slots(caller, max_depth, out);
    else
        capture_stack(max_depth, out);
}

bool is_own_frame(uintptr_t address) { return g_own_code.contains(address); }

void init_stack_capture() {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    init_frame_sizes();
    g_own_code = code_range_of(reinterpret_cast<const void*>(&capture_stack));
}

// libunwind's unw_backtrace() keeps its own per-thread cache of how each return address
// unwinds, so a stack made of known addresses costs a few nanoseconds a frame and takes no
// lock. It does not say where each return address was read from, so the call-site cache
// cannot be filled from it.
void capture_stack(uint32_t max_depth, CapturedStack* out) {
    LEAKWRAP_CHECK(inside_leakwrap() && max_depth <= layout::kMaxDepth);
    void* addresses[layout::kMaxDepth + kMaxOwnFrames];
    // Ask for the own frames usually at the inner end, and for more only if own frames left the
    // stack short (more own frames on this path, or the Ruby wrappers in the middle).
    int inner_own = g_inner_own_frames.load(std::memory_order_relaxed);
    int wanted = static_cast<int>(max_depth) + inner_own;
    for (;;) {
        int found = unw_backtrace(addresses, wanted);
        uint32_t depth = 0;
        int leading_own = 0;
        for (int i = 0; i < found && depth < max_depth; ++i) {
            auto ip = reinterpret_cast<uintptr_t>(addresses[i]);
            // leakwrap's frames sit at the inner end, and its wrappers of ruby_init/ruby_setup
            // in the middle of some stacks: neither is the program's code.
            if (!is_own_frame(ip))
                out->frames[depth++] = ip;
            else if (depth == 0)
                ++leading_own;
        }
        if (leading_own > inner_own) {
            g_inner_own_frames.store(leading_own, std::memory_order_relaxed);
            inner_own = leading_own;
        }
        out->depth = depth;
        out->slots_known = false;
        if (depth == max_depth || found < wanted || wanted == static_cast<int>(max_depth) + kMaxOwnFrames)
            return;
        wanted = static_cast<int>(max_depth) + kMaxOwnFrames;
    }
}

// The cursor API gives each frame's stack pointer, from which the slot of every return address
// follows: on x86_64 a return address sits just below the stack pointer of the frame it returns
// to. Each step takes a lock of libunwind's with two sigprocmask system calls: 2 us a frame on
// this project's virtual machines, where a walk by frame sizes takes nanoseconds.
// The cursor starts in the caller's frame, not in this function's: stepping out of leakwrap's
// own frames (four or five) would cost more than the frames wanted.
void capture_stack_with_slots(const CallerContext& caller, uint32_t max_depth, CapturedStack* out) {
    LEAKWRAP_CHECK(inside_leakwrap() && max_depth <= layout::kMaxDepth && max_depth > 0);
    out->depth = 0;
    out->slots_known = false;
    unw_context_t context;
    unw_cursor_t cursor;
    if (!init_cursor_at(caller.return_address, caller.stack_pointer, caller.frame_pointer, &context, &cursor)) return;
    bool slots_known = true;
    uint32_t depth = 0;
    FrameSizeLearner learner;
    for (bool after_signal = false;;) {
        uintptr_t ip = register_value(&cursor, UNW_REG_IP);
        learner.at(&cursor, ip, after_signal);
        if (!is_own_frame(ip)) {
            out->frames[depth] = ip;
            out->slots[depth] = learner.stack_pointer() - sizeof(uint64_t);
            ++depth;
        }
        if (learner.signal()) slots_known = false;
        if (depth == max_depth) {
            learner.stopped();
            break;
        }
        int stepped = unw_step(&cursor);
        learner.stepped(&cursor, stepped);
        if (stepped <= 0) break;
        after_signal = learner.signal();
    }
    out->depth = depth;
    out->slots_known = slots_known;
}

}  // namespace leakwrap
