// A control for the Ruby benchmarks, not a profiler: a preload whose malloc writes zeros over the
// bytes of stack below its caller's frame (LEAKWRAP_BENCH_TOUCH_BYTES, default 512) and then
// calls the real malloc. It records nothing and costs next to no memory, yet it changes what stale
// values Ruby's conservative GC finds on the machine stack, as any malloc wrapper that runs code
// there does (leakwrap's recording path is deeper than glibc's malloc). test/bench/
// ruby_gc_sensitivity.sh compares Ruby's heap under bare, this and leakwrap, to tell that effect
// from what leakwrap itself costs.
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>

namespace {

using MallocFunction = void* (*)(std::size_t);

constexpr std::size_t kMaxTouched = 64 * 1024;

MallocFunction g_real_malloc = nullptr;
std::size_t g_touched_bytes = 512;

// The array lies below this frame, its end next to it: the last `bytes` of it are the stack just
// below the caller's frame.
[[gnu::noinline]] void touch_stack(std::size_t bytes) {
    volatile char below[kMaxTouched];
    for (std::size_t i = kMaxTouched - bytes; i < kMaxTouched; i += sizeof(long))
        *reinterpret_cast<volatile long*>(&below[i]) = 0;
}

// Before main, while the process is single-threaded: dlsym of malloc allocates nothing.
[[gnu::constructor]] void find_real_malloc() {
    g_real_malloc = reinterpret_cast<MallocFunction>(dlsym(RTLD_NEXT, "malloc"));
    if (const char* text = std::getenv("LEAKWRAP_BENCH_TOUCH_BYTES")) {
        const std::size_t bytes = std::strtoul(text, nullptr, 10);
        g_touched_bytes = bytes < kMaxTouched ? bytes : kMaxTouched;
    }
}

}  // namespace

extern "C" [[gnu::visibility("default")]] void* malloc(std::size_t size) {
    if (g_real_malloc == nullptr) find_real_malloc();
    touch_stack(g_touched_bytes);
    return g_real_malloc(size);
}
