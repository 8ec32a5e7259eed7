// How the frame of a return address is unwound, read from the DWARF call frame information
// (CFI) of its module's .eh_frame: the FDE that covers the call and the CIE the FDE names, their
// instructions run up to the call (the return address minus one), as an unwinder would.
//
// Only the rules a walk by frame sizes can follow are told apart (frame_sizes.h):
//  - the canonical frame address (CFA) is rsp plus a constant, the return address at CFA - 8,
//    and the caller's rbp either kept or saved in one of the slots just below the return
//    address: a sized frame;
//  - CFA = rbp + 16, the return address at CFA - 8 and the caller's rbp at CFA - 16, the layout
//    of a frame-pointer prologue: a frame-pointer frame;
//  - the return address is undefined: the outermost frame (_start, a thread's start).
// Anything else is unwalkable: a CFA computed by an expression (frames that realign the stack,
// PLT entries), a signal frame (its CIE's augmentation has 'S'), rbp or the return address kept
// in another register or computed.
//
// Only x86_64's registers and the encodings GCC, Clang and hand-written assembly emit in
// .eh_frame are read; a record that uses others, is cut short or is malformed reads as
// unwalkable, never past the bounds of what the source can give.
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

// A module's bytes by their link-time virtual addresses (the ELF file's p_vaddr, before the
// load bias): read() copies up to `size` bytes at `address` into `out` and returns how many it
// could, 0 past what the source holds.
struct CfiSource {
    std::size_t (*read)(const void* context, uint64_t address, void* out, std::size_t size);
    const void* context;
};

// The rule (a frame_sizes.h value: a sized frame, kFramePointerFrame, kOutermostFrame or
// kUnwalkableFrame) of the code at `pc`, a link-time address, from the FDE at `fde_address`;
// kUnwalkableFrame also when that FDE does not cover pc.
uint32_t frame_rule_from_fde(const CfiSource& source, uint64_t fde_address, uint64_t pc);

}  // namespace leakwrap
