// The malloc family's semantics with leakwrap's bookkeeping, behind the exported entry points of
// exports.cpp. Each takes the context of the program's call (the caller's return address and
// stack pointer), which only the exported function's own frame can give; it is passed by value
// so that every entry point is a tail call and leaves no frame of its own.
#pragma once

#include <cstddef>

#include "caller.h"

namespace leakwrap {

void* allocate(std::size_t size, std::size_t alignment, bool zeroed, const CallerContext& caller) noexcept;
// malloc's: allocate(size, kNaturalAlignment, false, caller), the commonest call, compiled apart.
void* allocate_plain(std::size_t size, const CallerContext& caller) noexcept;
void deallocate(void* p) noexcept;
void* reallocate(void* p, std::size_t size, const CallerContext& caller) noexcept;
std::size_t usable_size(void* p) noexcept;

// memalign and aligned_alloc: a non-power-of-two alignment is rounded up.
void* allocate_aligned(std::size_t alignment, std::size_t size, const CallerContext& caller) noexcept;
// posix_memalign: EINVAL for an alignment that is not a power-of-two multiple of sizeof(void*).
int allocate_posix_aligned(void** out, std::size_t alignment, std::size_t size, const CallerContext& caller) noexcept;
// calloc (zeroed) and the count * size of reallocarray, ENOMEM when the product overflows.
void* allocate_array(std::size_t count, std::size_t size, bool zeroed, const CallerContext& caller) noexcept;
void* reallocate_array(void* p, std::size_t count, std::size_t size, const CallerContext& caller) noexcept;
// valloc (page-aligned) and pvalloc (also rounded up to whole pages).
std::size_t page_size() noexcept;
void* allocate_whole_pages(std::size_t size, const CallerContext& caller) noexcept;

}  // namespace leakwrap
