// Where the program called into the allocator: the return address and the caller's stack
// pointer at the call (the CFA of the interposed function). Taken in each exported entry point,
// so it names the program's frame however leakwrap's own functions are inlined.
#pragma once

#include <cstdint>

namespace leakwrap {

struct CallerContext {
    uintptr_t return_address;
    uintptr_t stack_pointer;
};

}  // namespace leakwrap

// A macro, since the builtins must run in the exported function's own frame.
#define LEAKWRAP_CALLER()                                                             \
    ::leakwrap::CallerContext {                                                       \
        reinterpret_cast<uintptr_t>(__builtin_return_address(0)),                     \
            reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa())                        \
    }
