#include "ruby_vm_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cstddef>

#include "thread_state.h"

namespace leakwrap {
namespace {

using Value = uintptr_t;  // Ruby's VALUE

// vm_core.h of Ruby 3.0 to 3.4 (release builds: VM_DEBUG_BP_CHECK off). A control frame is pushed
// for every method, block, class body and C method call, innermost at the lowest address; the
// frames end where the VM stack ends. A frame running Ruby code has a pc (the next instruction);
// a C method's or a dummy frame's pc is null. Each frame starts {pc, sp, iseq, ...}; 3.0 and 3.1
// have a base pointer and a JIT return address after the block code (8 words), 3.2 to 3.4 only
// the JIT return address (7 words).
struct ControlFrame {
    const Value* pc;
    Value* sp;
    const void* iseq;
};
constexpr std::size_t kFrameSizeBefore32 = 8 * sizeof(Value);
constexpr std::size_t kFrameSizeFrom32 = 7 * sizeof(Value);

}  // namespace

// Declared in thread_state.h, which holds a pointer to it.
struct ExecutionContext {
    Value* vm_stack;
    std::size_t vm_stack_size;  // in VALUEs
    ControlFrame* cfp;          // innermost frame
};

namespace {

// More frames than this between the innermost and the wanted Ruby frames (C methods calling
// blocks calling C methods...) are not fingerprinted: the caller asks Ruby instead.
constexpr uint32_t kMaxFramesWalked = 64;

constinit std::size_t g_frame_size = 0;  // 0: a Ruby whose frames are not read

// The calling thread's `ruby_current_ec` (a thread-local variable of libruby: the execution
// context of the fiber the thread runs). Its address is looked up once per thread: dlsym of a
// thread-local symbol answers for the calling thread.
const ExecutionContext* const* const kNoSlot = reinterpret_cast<const ExecutionContext* const*>(1);

const ExecutionContext* const* current_ec_slot() {
    const ExecutionContext* const*& slot = t_thread.ruby_execution_context;
    if (__builtin_expect(slot == nullptr, 0)) {
        void* found = dlsym(RTLD_DEFAULT, "ruby_current_ec");
        slot = found != nullptr ? static_cast<const ExecutionContext* const*>(found) : kNoSlot;
    }
    return slot;
}

// "3.N.x": the size of a control frame in that version, or 0.
std::size_t frame_size_of_version(const char* version) {
    if (version == nullptr || version[0] != '3' || version[1] != '.' || version[3] != '.') return 0;
    if (version[2] == '0' || version[2] == '1') return kFrameSizeBefore32;
    if (version[2] >= '2' && version[2] <= '4') return kFrameSizeFrom32;
    return 0;
}

}  // namespace

void init_ruby_vm_frames(const char* ruby_version) { g_frame_size = frame_size_of_version(ruby_version); }

namespace {

// x is a multiple of the constant kDivisor, tested without a division: GCC compiled the modulo
// by Ruby 3.2's 56-byte frame as a `div` (tens of cycles, on every allocation).
template <std::size_t kDivisor>
constexpr bool is_multiple_of(uint64_t x) {
    constexpr int kShift = std::countr_zero(kDivisor);
    constexpr uint64_t kOdd = kDivisor >> kShift;
    // The odd part's inverse modulo 2^64, by Newton's iteration: each step doubles the bits that
    // are right, and kOdd is its own inverse modulo 8.
    constexpr uint64_t kInverse = [] {
        uint64_t inverse = kOdd;
        for (int step = 0; step < 5; ++step) inverse *= 2 - kOdd * inverse;
        return inverse;
    }();
    static_assert(kOdd * kInverse == 1);
    return x % (uint64_t{1} << kShift) == 0 && (x >> kShift) * kInverse <= UINT64_MAX / kOdd;
}
static_assert(is_multiple_of<kFrameSizeFrom32>(0) && is_multiple_of<kFrameSizeFrom32>(56 * 1000) &&
              !is_multiple_of<kFrameSizeFrom32>(56 * 1000 + 8) && !is_multiple_of<kFrameSizeFrom32>(64) &&
              is_multiple_of<kFrameSizeBefore32>(64 * 3) && !is_multiple_of<kFrameSizeBefore32>(56));

// Each frame is mixed on its own (a Ruby frame's pc alone names its iseq, a C method's frame has
// no pc and names its method entry in the iseq word; the multiply spreads them over the word)
// and folded into the hash by a rotation, which places it by its position. Only the rotation
// and the xor are on the chain from frame to frame, so the frames' multiplies overlap: the walk
// costs the loads, not a multiply's latency a frame (Rails boot walks 11 frames an allocation).
// The final mix lets every frame reach every bit. The frame size is a constant, so that
// stepping and the layout check cost no division.
template <std::size_t kFrameSize>
RubyFramesFingerprint fingerprint_frames(const ExecutionContext* ec, uint32_t ruby_frames) {
    if (ec == nullptr || ec->vm_stack == nullptr || ruby_frames == 0) return {0, false};
    const auto begin = reinterpret_cast<uintptr_t>(ec->vm_stack);
    const uintptr_t end = begin + ec->vm_stack_size * sizeof(Value);
    uintptr_t frame = reinterpret_cast<uintptr_t>(ec->cfp);
    // The frames grow down from the end of the VM stack: anything else is not a layout we know.
    if (frame < begin || frame > end || !is_multiple_of<kFrameSize>(end - frame)) return {0, false};
    const uintptr_t last = std::min(end, frame + kMaxFramesWalked * kFrameSize);
    uint64_t h = 0x243F6A8885A308D3ull ^ ruby_frames;
    uint32_t ruby_frames_left = ruby_frames;
    while (frame < last) {
        const auto* control = reinterpret_cast<const ControlFrame*>(frame);
        const auto pc = reinterpret_cast<uintptr_t>(control->pc);
        const uint64_t words = reinterpret_cast<uintptr_t>(control->iseq) ^ std::rotl(uint64_t{pc}, 32);
        h = std::rotl(h, 23) ^ (words * 0xff51afd7ed558ccdull);
        frame += kFrameSize;
        if (pc != 0 && --ruby_frames_left == 0) break;
    }
    if (ruby_frames_left != 0 && frame < end) return {0, false};  // kMaxFramesWalked reached
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    h = (h ^ (h >> 29)) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return {h | 1, ruby_frames_left != 0};
}

}  // namespace

RubyFramesFingerprint ruby_frames_fingerprint(uint32_t ruby_frames) {
    const std::size_t frame_size = g_frame_size;
    if (frame_size == 0) return {0, false};
    const ExecutionContext* const* slot = current_ec_slot();
    if (slot == kNoSlot) return {0, false};
    return frame_size == kFrameSizeBefore32 ? fingerprint_frames<kFrameSizeBefore32>(*slot, ruby_frames)
                                            : fingerprint_frames<kFrameSizeFrom32>(*slot, ruby_frames);
}

}  // namespace leakwrap
