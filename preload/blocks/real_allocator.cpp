#include "real_allocator.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "guard.h"
#include "os.h"

namespace leakwrap {

constinit RealAllocator g_real{};
constinit bool g_real_resolved = false;
constinit bool g_real_is_glibc = false;

alignas(64) constinit char g_bootstrap[kBootstrapBytes]{};

namespace {

constinit std::atomic<std::size_t> g_bootstrap_used{0};

// Each bootstrap block keeps its size in the 16 bytes before it, for realloc and
// malloc_usable_size.
constexpr std::size_t kBootstrapHeader = 16;

template <typename Fn>
Fn lookup(const char* name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

bool try_resolve_real_allocator() {
    static constinit std::atomic<int> state{0};  // 0 unresolved, 1 resolving, 2 done
    int expected = 0;
    if (!state.compare_exchange_strong(expected, 1)) return expected == 2;
    GuardScope guard;  // dlsym's own allocations are served by the bootstrap arena
    RealAllocator r{};
    r.malloc = lookup<decltype(r.malloc)>("malloc");
    r.free = lookup<decltype(r.free)>("free");
    r.calloc = lookup<decltype(r.calloc)>("calloc");
    r.realloc = lookup<decltype(r.realloc)>("realloc");
    r.memalign = lookup<decltype(r.memalign)>("memalign");
    r.malloc_usable_size = lookup<decltype(r.malloc_usable_size)>("malloc_usable_size");
    g_real = r;
    g_real_is_glibc = r.malloc != nullptr && r.malloc == lookup<decltype(r.malloc)>("__libc_malloc");
    __atomic_store_n(&g_real_resolved, true, __ATOMIC_RELEASE);
    state.store(2, std::memory_order_release);
    return true;
}

void resolve_real_allocator() {
    // Another thread is inside dlsym: its own nested allocations never get here (the guard sends
    // them to the arena), so this wait always ends.
    while (!try_resolve_real_allocator()) os::yield_processor();
}

void* bootstrap_allocate(std::size_t size, std::size_t alignment) {
    if (alignment < kBootstrapHeader) alignment = kBootstrapHeader;
    std::size_t used = g_bootstrap_used.load(std::memory_order_relaxed);
    for (;;) {
        std::size_t user = (used + kBootstrapHeader + alignment - 1) & ~(alignment - 1);
        if (size > kBootstrapBytes || user > kBootstrapBytes - size) return nullptr;
        if (g_bootstrap_used.compare_exchange_weak(used, user + size)) {
            std::memcpy(g_bootstrap + user - kBootstrapHeader, &size, sizeof size);
            return g_bootstrap + user;
        }
    }
}

std::size_t bootstrap_block_size(const void* p) {
    std::size_t size;
    std::memcpy(&size, static_cast<const char*>(p) - kBootstrapHeader, sizeof size);
    return size;
}

}  // namespace leakwrap
