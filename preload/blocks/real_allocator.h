// The allocator below leakwrap (glibc, or jemalloc & co. when preloaded after us), found with
// dlsym(RTLD_NEXT), and the static bootstrap arena that serves allocations made before or while
// those functions are looked up (dlsym itself may call calloc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

struct RealAllocator {
    void* (*malloc)(std::size_t);
    void (*free)(void*);
    void* (*calloc)(std::size_t, std::size_t);
    void* (*realloc)(void*, std::size_t);
    void* (*memalign)(std::size_t, std::size_t);
    std::size_t (*malloc_usable_size)(void*);
};

extern constinit RealAllocator g_real;
extern constinit bool g_real_resolved;
// The real allocator is glibc's: the 16 bytes before any block it hands out are in its chunk
// header or the chunk before, always readable. Another allocator may hand out a block at the
// start of a mapping whose page before is not mapped. Set with g_real.
extern constinit bool g_real_is_glibc;

// Looks the real functions up once; false, at once, if another thread is doing it now.
bool try_resolve_real_allocator();
// The same, waiting for the other thread if need be: only for what cannot do without the real
// functions (freeing a block they made), never for a new allocation.
void resolve_real_allocator();

inline const RealAllocator& real() {
    if (__builtin_expect(!g_real_resolved, 0)) resolve_real_allocator();
    return g_real;
}

// Bootstrap arena: bump allocation from static zeroed storage, never reused, so calloc from it
// needs no memset and free() of its blocks is a no-op.
inline constexpr std::size_t kBootstrapBytes = 256 * 1024;
extern char g_bootstrap[kBootstrapBytes];
void* bootstrap_allocate(std::size_t size, std::size_t alignment);
inline bool is_bootstrap_block(const void* p) {
    return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_bootstrap) < kBootstrapBytes;
}
std::size_t bootstrap_block_size(const void* p);

}  // namespace leakwrap
