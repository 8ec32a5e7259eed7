// What each return address's frame spans on the stack, learned from its module's unwind table
// (unwind_tables.h) the first time a walk must step out of it, so that a stack of known return
// addresses is then walked with a table lookup and a load or two a frame.
//
// A frame whose canonical frame address (CFA) is the stack pointer plus a constant at the call
// it made (every frame compiled without a frame pointer, except those that realign the stack)
// has the same size at every call from that return address: its caller's return address lies
// at stack pointer + size - 8, and its caller's stack pointer is stack pointer + size. If it
// saved its caller's rbp (a callee-saved register it uses), the slot is kept too, so that the
// walk knows rbp in every frame: the slot is among the first pushes below the return address,
// where compilers save callee-saved registers.
//
// A frame whose CFA follows its frame pointer (CFA = rbp + 16, the layout of every frame-pointer
// prologue: push rbp; mov rsp, rbp) may allocate on the stack dynamically (alloca, VLAs), so its
// size is not fixed; it is walked through rbp instead: the return address at rbp + 8, the
// caller's rbp at rbp. Signal frames, frames whose CFA is neither, and return addresses two
// rules were learned for are unwalkable.
//
// Entries are never removed but all at once, when a module is unloaded (its addresses could be
// reused by other code); the table is process-private, so a forked child keeps what its parent
// learned, for the same code at the same addresses.
#pragma once

#include <cstdint>

namespace leakwrap {

// frame_size() of a return address not learned yet: walking must stop before it (or learn it).
inline constexpr uint32_t kUnknownFrame = 0;
// Not walkable (see above): libunwind must unwind it.
inline constexpr uint32_t kUnwalkableFrame = 1;
// The outermost frame: unwinding ends there.
inline constexpr uint32_t kOutermostFrame = 2;
// The CFA is rbp + 16: walked through the frame pointer.
inline constexpr uint32_t kFramePointerFrame = 3;
// Any value from 8 up is a frame walked by its size, sized_frame(): the size in bytes (a multiple
// of 8 up to kMaxFrameSize) plus, in the low three bits, the slot where the frame saved its
// caller's rbp: 0 for none, k for CFA - 8 - 8k.
inline constexpr uint32_t kMaxFrameSize = 0xfff8;
inline constexpr uint32_t kMaxSavedRbpSlot = 7;

constexpr bool is_sized_frame(uint32_t value) { return value >= 8; }
constexpr uint32_t sized_frame(uint32_t size, uint32_t saved_rbp_slot) { return size | saved_rbp_slot; }
constexpr uint32_t frame_bytes(uint32_t value) { return value & ~7u; }
constexpr uint32_t saved_rbp_slot(uint32_t value) { return value & 7u; }

// Once, at start-up, before any allocation is tracked; false if no memory (nothing is learned).
bool init_frame_sizes();

uint32_t frame_size(uintptr_t return_address);

// False once learning is impossible (no table, or no room left for an address): an unknown
// frame is then unwound by libunwind without trying to learn it.
bool can_learn_frame_sizes();

// What the unwind table says of a return address: a sized_frame(), or one of the markers above.
void learn_frame_size(uintptr_t return_address, uint32_t value);

// Forgets everything learned: some module was unloaded.
void forget_frame_sizes();

}  // namespace leakwrap
