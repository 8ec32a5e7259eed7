#include "ruby_location.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "guard.h"
#include "segment.h"

namespace leakwrap {
namespace {

// libruby's own entry points, all exported by Ruby >= 2.x:
//  - ruby_current_vm_ptr: NULL until ruby_init() and after the VM is destroyed;
//  - ruby_thread_has_gvl_p(): the thread is a Ruby thread holding the GVL (false for native
//    threads, for Ruby threads inside a blocking region, and once teardown has released the
//    main thread's execution context);
//  - rb_during_gc(): the call below is not made while the GC runs (objects may be moving);
//  - rb_source_location_cstr(): the file and line of the innermost Ruby-level frame. It walks
//    the control frames of the current thread and allocates nothing.
struct RubyApi {
    void* const* vm;
    int (*has_gvl)();
    int (*during_gc)();
    const char* (*source_location)(int*);
};
constinit RubyApi g_ruby{};

// Set when ruby_init()/ruby_setup() has returned: while the VM boots, ruby_current_vm_ptr is
// already set but the main thread has no control frame yet, and rb_source_location_cstr()
// would crash. Teardown needs no flag: it clears the execution context first, after which
// ruby_thread_has_gvl_p() is false.
constinit std::atomic<bool> g_vm_ready{false};

// File names are interned into the segment's string pool once; this process-private cache
// maps Ruby's string pointer to the pool offset (the content is compared too, since Ruby may
// reuse the memory of a freed string for another path).
struct InternedFile {
    const char* source;
    uint32_t offset;
    uint32_t length;
};
constexpr uint32_t kCacheSlots = 1024;
constexpr uint32_t kProbes = 8;
constexpr std::size_t kMaxPathLength = 4096;
constinit InternedFile g_interned[kCacheSlots]{};
constinit std::atomic_flag g_interning = ATOMIC_FLAG_INIT;

bool same_file(const InternedFile& entry, const char* file) {
    return entry.source == file && std::strncmp(pool_string(entry.offset), file, entry.length + 1) == 0;
}

uint32_t intern_file(const char* file) {
    uint32_t slot = static_cast<uint32_t>((reinterpret_cast<uintptr_t>(file) >> 4) * 0x9E3779B1u) %
                    kCacheSlots;
    // Callers hold the GVL, so this lock is practically never contended.
    while (g_interning.test_and_set(std::memory_order_acquire)) {
    }
    uint32_t result = layout::kNoString;
    uint32_t free_slot = slot;
    for (uint32_t probe = 0; probe < kProbes; ++probe) {
        InternedFile& entry = g_interned[(slot + probe) % kCacheSlots];
        if (entry.source != nullptr && same_file(entry, file)) {
            result = entry.offset;
            break;
        }
        if (entry.source == nullptr) {
            free_slot = (slot + probe) % kCacheSlots;
            break;
        }
    }
    if (result == layout::kNoString) {
        layout::StringRef stored{};
        std::size_t length = strnlen(file, kMaxPathLength);
        if (intern_string(file, length, &stored)) {
            g_interned[free_slot] = InternedFile{file, stored.offset, stored.length};
            result = stored.offset;
        }
    }
    g_interning.clear(std::memory_order_release);
    return result;
}

template <typename T>
T ruby_symbol(const char* name) {
    return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void init_ruby_location() {
    RubyApi api{};
    api.vm = ruby_symbol<void* const*>("ruby_current_vm_ptr");
    api.has_gvl = ruby_symbol<int (*)()>("ruby_thread_has_gvl_p");
    api.during_gc = ruby_symbol<int (*)()>("rb_during_gc");
    api.source_location = ruby_symbol<const char* (*)(int*)>("rb_source_location_cstr");
    if (api.vm && api.has_gvl && api.during_gc && api.source_location) g_ruby = api;
}

RubyLocation current_ruby_location() {
    if (g_ruby.source_location == nullptr || !g_vm_ready.load(std::memory_order_acquire) ||
        *g_ruby.vm == nullptr || !g_ruby.has_gvl() || g_ruby.during_gc())
        return {};
    int line = 0;
    const char* file = g_ruby.source_location(&line);
    if (file == nullptr) return {};
    uint32_t offset = intern_file(file);
    if (offset == layout::kNoString) return {};
    return RubyLocation{offset, line > 0 ? static_cast<uint32_t>(line) : 0};
}

}  // namespace leakwrap

// The interpreter's start-up calls, wrapped to learn when the VM is ready. Both exist in every
// libruby; in other programs they are never called.
extern "C" {

__attribute__((visibility("default"))) int ruby_setup(void) {
    int (*real_setup)();
    {
        leakwrap::GuardScope guard;
        real_setup = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "ruby_setup"));
    }
    int status = real_setup != nullptr ? real_setup() : -1;
    if (status == 0) leakwrap::g_vm_ready.store(true, std::memory_order_release);
    return status;
}

__attribute__((visibility("default"))) void ruby_init(void) {
    void (*real_init)();
    {
        leakwrap::GuardScope guard;
        real_init = reinterpret_cast<void (*)()>(dlsym(RTLD_NEXT, "ruby_init"));
    }
    if (real_init != nullptr) real_init();
    leakwrap::g_vm_ready.store(true, std::memory_order_release);
}

}  // extern "C"
