// What each return address's frame spans on the stack, learned from libunwind's slow unwinds, so
// that a stack of known return addresses is then walked with a table lookup and a load a frame.
//
// A frame whose canonical frame address (CFA) is the stack pointer plus a constant at the call
// it made (every frame compiled without a frame pointer, except those that realign the stack)
// has the same size at every call from that return address: its caller's return address lies
// at stack pointer + size - 8, and its caller's stack pointer is stack pointer + size. A frame
// whose CFA follows its frame pointer may allocate on the stack dynamically (alloca, VLAs) and
// is never walked by size: the slow unwind tells it by its frame pointer lying 16 bytes below
// the CFA, the layout of every frame-pointer prologue. Two sizes seen for one return address
// make it unwalkable too. Signal frames are unwalkable.
//
// Entries are never removed but all at once, when a module is unloaded (its addresses could be
// reused by other code); the table is process-private, so a forked child keeps what its parent
// learned, for the same code at the same addresses.
#pragma once

#include <cstdint>

namespace leakwrap {

// frame_size() of a return address never seen by a slow unwind: walking must stop before it.
inline constexpr uint32_t kUnknownFrame = 0;
// Seen as the last frame a slow unwind asked for: it may end a walk, not be walked through.
inline constexpr uint32_t kSeenFrame = 1;
// Not walkable by size (see above): libunwind must unwind it.
inline constexpr uint32_t kUnwalkableFrame = 2;
// The outermost frame: unwinding ends there.
inline constexpr uint32_t kOutermostFrame = 3;
// Any other value is a size in bytes, a multiple of 8 between 8 and kMaxFrameSize.
inline constexpr uint32_t kMaxFrameSize = 0xfff8;

// Once, at start-up, before any allocation is tracked; false if no memory (nothing is learned).
bool init_frame_sizes();

uint32_t frame_size(uintptr_t return_address);

// False once learning is impossible (no table, or no room left for an address): an unknown
// frame is then unwound by libunwind without trying to learn it.
bool can_learn_frame_sizes();

// What a slow unwind found for a return address: a size, or one of the markers above.
void learn_frame_size(uintptr_t return_address, uint32_t size);

// Forgets everything learned: some module was unloaded.
void forget_frame_sizes();

}  // namespace leakwrap
