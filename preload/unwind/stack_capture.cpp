#include "stack_capture.h"

#include <pthread.h>
#include <ucontext.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <atomic>

#include "code_range.h"
#include "debug_check.h"
#include "fork_fence.h"
#include "frame_sizes.h"
#include "guard.h"
#include "thread_state.h"
#include "unwind_tables.h"

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

// The rule of the frame of `ip`, learned now from its module's unwind table if learning pays;
// kUnknownFrame if it does not. A walk thus pays for each frame it must step out of and does not
// know, not for an unwind of the whole stack.
__attribute__((noinline, cold)) uint32_t learn_frame_now(UnwindTableReader& tables, uintptr_t ip) {
    StackWalkCounts& counts = t_thread.stack_walks;
    if (!can_learn_frame_sizes() || !learning_pays(counts)) return kUnknownFrame;
    ++counts.learned;
    const uint32_t rule = tables.frame_rule(ip);
    if (rule != kUnknownFrame) learn_frame_size(ip, rule);
    return frame_size(ip);
}

// libunwind makes system calls that are cancellation points on some paths (msync to check that
// an address is mapped, open and read to load a module's .debug_frame). A thread that another
// one cancelled must not act on it there, inside its program's malloc (os.h says why): each
// unwind runs with cancellation disabled (I8).
class CancellationHeldOff {
public:
    CancellationHeldOff() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_); }
    ~CancellationHeldOff() { pthread_setcancelstate(previous_, nullptr); }
    CancellationHeldOff(const CancellationHeldOff&) = delete;
    CancellationHeldOff& operator=(const CancellationHeldOff&) = delete;

private:
    int previous_ = PTHREAD_CANCEL_ENABLE;
};

// While another thread forks, neither libunwind nor a module's unwind table is read
// (fork_fence.h): the stack is what the frames learned so far reach, the caller's frame at
// least. Its slots are left unknown, so that the call-site cache does not keep this short stack
// for later calls.
void record_known_frames(const CallerContext& caller, uint32_t max_depth, CapturedStack* out) {
    walk_stack_by_frame_sizes(caller, max_depth, nullptr, false, out, nullptr);
    if (out->depth == 0) {
        out->frames[0] = caller.return_address;
        out->depth = 1;
    }
    out->slots_known = false;
}

#if defined(LEAKWRAP_DEBUG) && LEAKWRAP_DEBUG
// A walk by frame sizes finds what libunwind finds from the caller's frame on (unless a fork
// turns libunwind away).
bool same_as_libunwind(const CapturedStack& walked) {
    ForkFencedSection section;
    if (!section.entered()) return true;
    CancellationHeldOff no_cancellation;
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
    if (bounds.high == 0 || stack_pointer < bounds.low || stack_pointer >= bounds.high) {
        out->depth = 0;
        return StackWalk::kNotWalkable;
    }
    const CodeRange own = g_own_code;
    uintptr_t ip = caller.return_address;
    // rbp as each frame had it at its call: a frame either keeps it, or saved it (sized frames)
    // or set it (frame-pointer frames), so the slot to restore it from is known.
    uintptr_t frame_pointer = caller.frame_pointer;
    uint32_t depth = 0;
    // For `stop`: frames inside its code at the inner end, and whether one outside came since.
    uint32_t inner_frames_inside = 0;
    bool outside_seen = false;
    UnwindTableReader tables;
    StackWalk result = StackWalk::kWalked;
    if (cut != nullptr) *cut = 0;
    // Every frame stepped out of costs a lookup and a few compares: the markers, rare past a
    // thread's first stacks, are told apart only off the path of a sized frame. The frame that
    // ends the walk is not looked up: often never learned, it would cost a miss in the table.
    for (;;) {
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
        // A frame the walk must step out of and does not know is learned now: a frame that
        // only ends the walk costs nothing.
        uint32_t value = frame_size(ip);
        if (__builtin_expect(!is_sized_frame(value), 0) && value != kFramePointerFrame && value != kOutermostFrame) {
            if (value == kUnknownFrame && may_learn) value = learn_frame_now(tables, ip);
            if (value == kUnknownFrame || value == kUnwalkableFrame) {
                result = value == kUnknownFrame && can_learn_frame_sizes() ? StackWalk::kNeedsLearning
                                                                           : StackWalk::kNotWalkable;
                break;
            }
        }
        uintptr_t caller_stack_pointer;
        if (__builtin_expect(is_sized_frame(value), 1)) {
            caller_stack_pointer = stack_pointer + frame_bytes(value);
            if (caller_stack_pointer > bounds.high) {
                result = StackWalk::kNotWalkable;
                break;
            }
            if (const uint32_t slot = saved_rbp_slot(value))
                frame_pointer = *reinterpret_cast<const uint64_t*>(caller_stack_pointer - 8 - 8 * slot);
        } else if (value == kFramePointerFrame) {
            // The frame lies above its callee's; rbp that is not is not this frame's.
            if (frame_pointer < stack_pointer || frame_pointer % 8 != 0 || frame_pointer > bounds.high - 16) {
                result = StackWalk::kNotWalkable;
                break;
            }
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
    LEAKWRAP_CHECK(result != StackWalk::kWalked || same_as_libunwind(*out));
#endif
    return result;
}

// Flattened: the walk and its frame lookups are inlined here, with `stop` known to be set and
// learning allowed, and this into its caller (site_table.cpp), so that a Ruby allocation's walk
// passes its stack through no call (ruby_json: 13M fewer instructions of 3.12G).
__attribute__((flatten)) bool try_walking_stack(const CallerContext& caller, uint32_t max_depth,
                                                const CodeBoundary& stop, CapturedStack* out, uint32_t* cut) {
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
        capture_stack(caller, max_depth, out);
}

bool is_own_frame(uintptr_t address) { return g_own_code.contains(address); }

void init_stack_capture() {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    init_frame_sizes();
    init_unwind_tables();
    g_own_code = code_range_of(reinterpret_cast<const void*>(&capture_stack));
}

// libunwind's unw_backtrace() keeps its own per-thread cache of how each return address
// unwinds, so a stack made of known addresses costs a few nanoseconds a frame and takes no
// lock. It does not say where each return address was read from, so the call-site cache
// cannot be filled from it.
void capture_stack(const CallerContext& caller, uint32_t max_depth, CapturedStack* out) {
    LEAKWRAP_CHECK(inside_leakwrap() && max_depth <= layout::kMaxDepth && max_depth > 0);
    ForkFencedSection section;
    if (!section.entered()) return record_known_frames(caller, max_depth, out);
    CancellationHeldOff no_cancellation;
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
        if (depth == max_depth || found < wanted || wanted == static_cast<int>(max_depth) + kMaxOwnFrames) return;
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
    ForkFencedSection section;
    if (!section.entered()) return record_known_frames(caller, max_depth, out);
    CancellationHeldOff no_cancellation;
    unw_context_t context;
    unw_cursor_t cursor;
    if (!init_cursor_at(caller.return_address, caller.stack_pointer, caller.frame_pointer, &context, &cursor)) return;
    bool slots_known = true;
    uint32_t depth = 0;
    for (;;) {
        const uintptr_t ip = register_value(&cursor, UNW_REG_IP);
        if (!is_own_frame(ip)) {
            out->frames[depth] = ip;
            out->slots[depth] = register_value(&cursor, UNW_REG_SP) - sizeof(uint64_t);
            ++depth;
        }
        // The frame inside a signal frame was interrupted, not called: no slot holds its address.
        if (unw_is_signal_frame(&cursor) > 0) slots_known = false;
        if (depth == max_depth || unw_step(&cursor) <= 0) break;
    }
    out->depth = depth;
    out->slots_known = slots_known;
}

}  // namespace leakwrap
