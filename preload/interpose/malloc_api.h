// The malloc family's semantics with leakwrap's bookkeeping, behind the exported entry points of
// exports.cpp. Each takes the context of the program's call (the caller's return address and
// stack pointer), which only the exported function's own frame can give; it is passed by value
// so that every entry point is a tail call and leaves no frame of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aligned_blocks.h"
#include "block_header.h"
#include "caller.h"
#include "real_allocator.h"
#include "sampler.h"
#include "thread_state.h"

namespace leakwrap {

// Sampling mode's fast paths (sampler.h), inlined into the exported functions, so that a block
// left bare costs a countdown and a branch, and its free a look at the word before it.

// True when the sampler skips an allocation of `size` bytes with bare unsampled blocks: the
// caller hands it to the real allocator as it is. False sends it down the whole path, which
// draws again (the countdown crossed zero there too, or the thread has not drawn yet).
inline bool sampler_leaves_bare(std::size_t size) noexcept {
    if (!g_unsampled_blocks_bare) return false;
    int64_t& countdown = t_thread.sampler.bytes_until_sample;
    countdown -= static_cast<int64_t>(size);
    return countdown > 0;
}

// I9: with bare unsampled blocks (so under glibc), a block leakwrap never touched: no tag bit before
// it, not from the bootstrap arena, and not aligned to a page (where a tracked block may have no
// header: I7). In exact mode nearly every block has a header, and the look would only add to it.
inline bool is_glibcs_bare_block(void* p) noexcept {
    return g_unsampled_blocks_bare && !is_bootstrap_block(p) && !may_be_headerless(p) && !has_tag_bit(p);
}

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
