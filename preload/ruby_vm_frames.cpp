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

// One multiply a frame on the hash's chain, the rotation bringing its high bits down into the
// next; a frame's two words are combined off the chain (a Ruby frame's pc alone names its iseq,
// a C method's frame has no pc and names its method entry in the iseq word). The frame size is
// a constant, so that stepping and the layout check cost no division.
template <std::size_t kFrameSize>
RubyFramesFingerprint fingerprint_frames(const ExecutionContext* ec, uint32_t ruby_frames) {
    if (ec == nullptr || ec->vm_stack == nullptr) return {0, false};
    const auto begin = reinterpret_cast<uintptr_t>(ec->vm_stack);
    const uintptr_t end = begin + ec->vm_stack_size * sizeof(Value);
    uintptr_t frame = reinterpret_cast<uintptr_t>(ec->cfp);
    // The frames grow down from the end of the VM stack: anything else is not a layout we know.
    if (frame < begin || frame > end || (end - frame) % kFrameSize != 0) return {0, false};
    const uintptr_t last = std::min(end, frame + kMaxFramesWalked * kFrameSize);
    uint64_t h = 0x243F6A8885A308D3ull ^ ruby_frames;
    uint32_t ruby_frames_seen = 0;
    for (; frame < last && ruby_frames_seen < ruby_frames; frame += kFrameSize) {
        const auto* control = reinterpret_cast<const ControlFrame*>(frame);
        const auto pc = reinterpret_cast<uintptr_t>(control->pc);
        const uint64_t words = reinterpret_cast<uintptr_t>(control->iseq) ^ std::rotl(uint64_t{pc}, 32);
        h = std::rotl((h ^ words) * 0xff51afd7ed558ccdull, 29);
        ruby_frames_seen += pc != 0;
    }
    if (ruby_frames_seen < ruby_frames && frame < end) return {0, false};  // kMaxFramesWalked reached
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return {h | 1, ruby_frames_seen < ruby_frames};
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
