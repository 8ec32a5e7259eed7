// Where the program called into the allocator: the return address, the caller's stack pointer
// at the call (the CFA of the interposed function) and its frame pointer register. Taken in each exported entry point,
// so it names the program's frame however leakwrap's own functions are inlined.
#pragma once

#include <cstdint>

namespace leakwrap {

struct CallerContext {
    uintptr_t return_address;
    uintptr_t stack_pointer;
    uintptr_t frame_pointer;  // the caller's rbp at the call, for walking frame-pointer frames
};

}  // namespace leakwrap

// A macro, since the builtins must run in the exported function's own frame. Asking for that
// frame's address gives the function a frame pointer, whose slot holds the caller's rbp.
#define LEAKWRAP_CALLER()                                                                                             \
    ::leakwrap::CallerContext {                                                                                       \
        reinterpret_cast<uintptr_t>(__builtin_return_address(0)), reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()), \
            *static_cast<const uintptr_t*>(__builtin_frame_address(0))                                                \
    }
