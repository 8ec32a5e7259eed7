// The malloc family behind the exported entry points (exports.cpp). Semantics follow glibc's
// (realloc(p, 0) frees and returns NULL, memalign/aligned_alloc round a non-power-of-two
// alignment up, posix_memalign rejects it with EINVAL, overflowing calloc/reallocarray give
// ENOMEM); leakwrap only adds bookkeeping.
//
// The hot path keeps the invariants I1-I9 of preload/README.md, cited by number where code
// relies on one; LEAKWRAP_CHECK checks those that a check can (-DLEAKWRAP_DEBUG=ON, as CI's).
#include "malloc_api.h"

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aligned_blocks.h"
#include "allocation_site.h"
#include "bins.h"
#include "block_header.h"
#include "caller.h"
#include "debug_check.h"
#include "guard.h"
#include "lifecycle.h"
#include "os.h"
#include "real_allocator.h"
#include "sampler.h"
#include "site_counters.h"
#include "stack_capture.h"

namespace leakwrap {
namespace {

constexpr std::size_t kMaxAlignment = std::size_t{1} << 62;

// Blocks nobody tracks: leakwrap's own, pass-through mode, or before the real allocator is known.
void* allocate_untracked(std::size_t size, std::size_t alignment, bool zeroed) {
    // Until the real functions are known, and while another thread looks them up, the bootstrap
    // arena serves: an allocation never waits.
    if (!g_real_resolved && (inside_leakwrap() || !try_resolve_real_allocator()))
        return bootstrap_allocate(size, alignment);
    if (alignment <= kNaturalAlignment) return zeroed ? g_real.calloc(1, size) : g_real.malloc(size);
    void* block = g_real.memalign(alignment, size);
    if (block != nullptr && zeroed) std::memset(block, 0, size);
    return block;
}

// The bookkeeping of every allocation and free is inlined into the exported function that runs
// it: calls between these small functions spilled the caller context through memory and saved
// registers at each step, which cost a storm of small blocks more than the counting itself.

// Counts a new block in its bin and, if it is sampled (always, in exact mode), at its site.
// Called with the guard held: the unwinder and the site table may allocate. With bare unsampled
// blocks, only sampled ones get here: the draw was made before they were allocated.
inline __attribute__((always_inline)) uint32_t account_allocation(uint64_t size, const CallerContext& caller) {
    const uint32_t size_class = layout::size_class_of(size);
    count_bin_allocation(size_class, size);
    if (!g_unsampled_blocks_bare && !should_sample(size)) return kUnsampledSite;
    uint32_t site = site_for_allocation(size_class, caller);
    count_allocation(site, size);
    return site;
}

inline __attribute__((always_inline)) void account_free(uint64_t size, uint32_t site) {
    count_bin_free(layout::size_class_of(size), size);
    if (site < g_segment.site_capacity) count_free(site, size);
}

inline __attribute__((always_inline)) void* allocate_tracked(std::size_t size, std::size_t alignment, bool zeroed,
                                                             const CallerContext& caller) {
    const std::size_t padding = max_raw_offset_for(alignment);
    if (size > kMaxRequest - padding) {
        errno = ENOMEM;
        return nullptr;
    }
    LEAKWRAP_CHECK(!inside_leakwrap());  // I1: a tracked allocation starts without the guard
    int saved_errno = errno;             // I6
    GuardScope guard;
    bool counted = false;
    uint32_t site = kUnsampledSite;
    if (alignment >= kHeaderlessAlignment && size <= kMaxHeaderlessSize) {
        void* block = g_real.memalign(alignment, size);
        if (block == nullptr) return nullptr;  // errno set by the real allocator
        if (zeroed) std::memset(block, 0, size);
        site = account_allocation(size, caller);
        counted = true;
        if (remember_headerless_block(block, size, site)) {
            errno = saved_errno;
            return block;
        }
        g_real.free(block);  // no room in the table: the block takes a header after all
    }
    // Every alignment below the headerless ones is padded (block_header.h).
    static_assert(kMaxPaddedAlignment * 2 == kHeaderlessAlignment);
    const bool padded = alignment <= kMaxPaddedAlignment;
    void* raw;
    if (padded) {
        raw = zeroed ? g_real.calloc(1, size + padding) : g_real.malloc(size + padding);
    } else {
        raw = g_real.memalign(alignment, size + padding);
        if (raw != nullptr && zeroed) std::memset(static_cast<char*>(raw) + padding, 0, size);
    }
    if (raw == nullptr) {  // errno set by the real allocator
        if (counted) account_free(size, site);
        return nullptr;
    }
    if (!counted) site = account_allocation(size, caller);
    errno = saved_errno;
    return stamp_block(raw, padded ? raw_offset_in_padded_block(raw, alignment) : padding, size, site, g_tag_secret);
}

// A block's header lies in the 16 bytes before it. Under another allocator than glibc's, those
// of a foreign block that starts a page may lie in a page that is not mapped: read them without
// faulting there (a system call, on frees of blocks so placed only).
bool is_tracked_block(void* p) {
    if (g_real_is_glibc && !has_tag_bit(p)) return false;
    constexpr uintptr_t kSmallestPage = 4096;
    if (__builtin_expect(!g_real_is_glibc, 0) && reinterpret_cast<uintptr_t>(p) % kSmallestPage < kHeaderSize) {
        BlockHeader header;
        return os::read_own_memory(header_of(p), &header, sizeof header) && header.tag == tag_for(p, g_tag_secret);
    }
    return tag_matches(p, g_tag_secret);
}

// Counts the free of a tracked block (unless leakwrap itself is running on this thread: then the
// thread is forking or in a signal handler, and the segment may not be this process's) and
// returns the real block.
void* release_tracked(void* user) {
    if (!inside_leakwrap() && tracking_enabled() && g_segment.base != nullptr) {
        const BlockHeader* header = header_of(user);
        account_free(requested_size(header), header->site);
    }
    return raw_of(user);
}

// Forgets a headerless block (aligned_blocks.h), counting its free as release_tracked() does;
// false if `block` is not one.
bool release_headerless(void* block) {
    uint64_t size;
    uint32_t site;
    if (!find_headerless_block(block, true, &size, &site)) return false;
    if (!inside_leakwrap() && tracking_enabled() && g_segment.base != nullptr) account_free(size, site);
    return true;
}

// realloc into another block: the contents of `old_block` move into `fresh`, and it is freed;
// if `fresh` is null (no memory), it stays as it was.
void* move_into(void* fresh, void* old_block, std::size_t old_size, std::size_t new_size) {
    if (fresh == nullptr) return nullptr;
    std::memcpy(fresh, old_block, old_size < new_size ? old_size : new_size);
    deallocate(old_block);
    return fresh;
}

// realloc of a block we cannot resize in place: move it into a fresh block.
void* move_to_new_block(void* old_block, std::size_t old_size, std::size_t new_size, const CallerContext& caller) {
    return move_into(allocate(new_size, kNaturalAlignment, false, caller), old_block, old_size, new_size);
}

// A tracked allocation now, by a program's call: not leakwrap's own, nor one made while tracking is
// off; with bare unsampled blocks, only if the sampler draws it.
inline __attribute__((always_inline)) bool tracks_allocation(std::size_t size, const CallerContext& caller) {
    if (__builtin_expect(inside_leakwrap(), 0) || !tracking_enabled() || is_own_frame(caller.return_address))
        return false;
    return !g_unsampled_blocks_bare || should_sample(size);
}

}  // namespace

std::size_t page_size() noexcept {
    static constinit std::size_t cached = 0;
    if (cached == 0) cached = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return cached;
}

namespace {

// leakwrap's own blocks are untracked: those it allocates holding the guard, and those the
// libstdc++ linked into it allocates for itself (its exception pool, at load). Inlined into
// allocate_plain(), where malloc's constant alignment and zeroed flag take the aligned and
// zeroing paths out.
inline __attribute__((always_inline)) void* allocate_block(std::size_t size, std::size_t alignment, bool zeroed,
                                                           const CallerContext& caller) {
    if (!tracks_allocation(size, caller)) return allocate_untracked(size, alignment, zeroed);
    return allocate_tracked(size, alignment, zeroed, caller);
}

}  // namespace

void* allocate(std::size_t size, std::size_t alignment, bool zeroed, const CallerContext& caller) noexcept {
    return allocate_block(size, alignment, zeroed, caller);
}

// Kept out of the exported malloc (link-time optimization would inline it): the registers its
// bookkeeping needs were otherwise saved on every call, the fast path of a bare block included.
__attribute__((noinline)) void* allocate_plain(std::size_t size, const CallerContext& caller) noexcept {
    return allocate_block(size, kNaturalAlignment, false, caller);
}

void deallocate(void* p) noexcept {
    if (p == nullptr || is_bootstrap_block(p)) return;  // bootstrap blocks are never reused
    // I2: the bookkeeping first, so that no other thread is handed the block while it is counted;
    // I7: a headerless block's entry goes on every free of it.
    if (is_tracked_block(p))
        p = release_tracked(p);
    else if (may_be_headerless(p))
        release_headerless(p);
    real().free(p);
}

std::size_t usable_size(void* p) noexcept {
    if (p == nullptr) return 0;
    if (is_bootstrap_block(p)) return bootstrap_block_size(p);
    if (!is_tracked_block(p)) return real().malloc_usable_size(p);
    return real().malloc_usable_size(raw_of(p)) - raw_offset(header_of(p));
}

void* reallocate(void* p, std::size_t size, const CallerContext& caller) noexcept {
    if (p == nullptr) return allocate(size, kNaturalAlignment, false, caller);
    if (is_bootstrap_block(p)) {
        if (size == 0) return nullptr;
        return move_to_new_block(p, bootstrap_block_size(p), size, caller);
    }
    uint64_t headerless_size;
    uint32_t headerless_site;
    const bool tracked = is_tracked_block(p);
    const bool headerless =
        !tracked && may_be_headerless(p) && find_headerless_block(p, false, &headerless_size, &headerless_site);
    if (!tracked && !headerless) {
        // A foreign block stays foreign, but for a bare unsampled one whose new size is sampled.
        if (g_unsampled_blocks_bare && size != 0 && size <= kMaxRequest - kNaturalAlignment &&
            tracks_allocation(size, caller))
            return move_into(allocate_tracked(size, kNaturalAlignment, false, caller), p, real().malloc_usable_size(p),
                             size);
        return real().realloc(p, size);
    }
    if (size == 0) {
        deallocate(p);
        return nullptr;
    }
    // Its alignment is kept only by a new block of that alignment: realloc moves it to a plain one.
    if (headerless) return move_to_new_block(p, headerless_size, size, caller);
    const BlockHeader* header = header_of(p);
    std::size_t old_size = requested_size(header);
    if (raw_offset(header) != kNaturalAlignment || inside_leakwrap() || !tracking_enabled())
        return move_to_new_block(p, old_size, size, caller);
    if (size > kMaxRequest - kNaturalAlignment) {
        errno = ENOMEM;
        return nullptr;
    }
    if (g_unsampled_blocks_bare && !should_sample(size))  // the new block is not sampled: bare
        return move_into(allocate_untracked(size, kNaturalAlignment, false), p, old_size, size);
    int saved_errno = errno;
    BlockHeader old_header = *header;
    GuardScope guard;
    // I2: the real allocator first; the old block's header was copied before it.
    void* raw = g_real.realloc(raw_of(p), size + kNaturalAlignment);
    if (raw == nullptr) return nullptr;  // the old block is untouched and still counted
    account_free(requested_size(&old_header), old_header.site);
    uint32_t site = account_allocation(size, caller);
    errno = saved_errno;
    return stamp_block(raw, kNaturalAlignment, size, site, g_tag_secret);
}

// memalign's rules: small alignments are plain malloc, others are rounded up to a power of two.
// As glibc 2.36's: above SIZE_MAX / 2 + 1 an alignment cannot be rounded up (EINVAL); up to it,
// one beyond kMaxAlignment leaves no room for any block (ENOMEM).
void* allocate_aligned(std::size_t alignment, std::size_t size, const CallerContext& caller) noexcept {
    if (alignment > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return nullptr;
    }
    if (alignment > kMaxAlignment) {
        errno = ENOMEM;
        return nullptr;
    }
    if (!is_power_of_two(alignment)) alignment = round_up_to_power_of_two(alignment);
    return allocate(size, alignment, false, caller);
}

int allocate_posix_aligned(void** out, std::size_t alignment, std::size_t size, const CallerContext& caller) noexcept {
    if (alignment % sizeof(void*) != 0 || !is_power_of_two(alignment / sizeof(void*))) return EINVAL;
    int saved_errno = errno;
    void* block = allocate(size, alignment, false, caller);
    if (block == nullptr) return ENOMEM;
    errno = saved_errno;
    *out = block;
    return 0;
}

void* allocate_array(std::size_t count, std::size_t size, bool zeroed, const CallerContext& caller) noexcept {
    std::size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return nullptr;
    }
    return allocate(bytes, kNaturalAlignment, zeroed, caller);
}

void* reallocate_array(void* p, std::size_t count, std::size_t size, const CallerContext& caller) noexcept {
    std::size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return nullptr;
    }
    return reallocate(p, bytes, caller);
}

void* allocate_whole_pages(std::size_t size, const CallerContext& caller) noexcept {
    std::size_t page = page_size();
    std::size_t rounded;
    if (__builtin_add_overflow(size, page - 1, &rounded)) {
        errno = ENOMEM;
        return nullptr;
    }
    rounded &= ~(page - 1);
    return allocate(rounded == 0 ? page : rounded, page, false, caller);
}

}  // namespace leakwrap
