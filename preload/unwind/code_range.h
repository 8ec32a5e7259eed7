// The span of executable code of one loaded module: leakwrap's own (whose frames are left out of
// every stack) and the Ruby VM's (where a Ruby thread's native stack is cut).
#pragma once

#include <cstdint>

namespace leakwrap {

struct CodeRange {
    uintptr_t begin = 0;
    uintptr_t end = 0;  // one past the last byte; begin == end: unknown

    bool contains(uintptr_t address) const { return address >= begin && address < end; }
};

// The executable PT_LOAD segments of the module that contains `address`, from the lowest to the
// highest. Calls dladdr and dl_iterate_phdr: only at start-up, never inside an allocation.
// Empty if a fork turns the loader away (fork_fence.h).
CodeRange code_range_of(const void* address);

}  // namespace leakwrap
