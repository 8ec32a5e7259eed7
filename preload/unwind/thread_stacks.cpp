#include "thread_stacks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/auxv.h>

#include <cerrno>
#include <cstring>

#include "guard.h"
#include "os.h"
#include "real_allocator.h"

// The start of the initial process stack, set by the dynamic loader (ld.so exports it).
extern "C" void* __libc_stack_end;

namespace leakwrap {

namespace {

// The main thread's stack as pthread_getattr_np() gives it, without the read of
// /proc/self/maps it makes for that thread: the stack ends at the page after __libc_stack_end,
// and may grow down to the stack size limit below the end of its mapping. The kernel writes the
// path that was executed (AT_EXECFN) at the top of that mapping, below one null word, so the
// mapping ends at the first page boundary after it. Only trusted when the calling frame lies
// within; false otherwise (no AT_EXECFN, an unlimited stack, whose growth other mappings bound
// instead), and the caller asks glibc.
bool main_thread_stack_from_auxv(StackBounds* bounds) {
    const auto* executed = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    const uint64_t limit = os::stack_size_limit();
    if (executed == nullptr || limit == 0) return false;
    constexpr uintptr_t kPage = 4096;
    const uintptr_t mapping_end =
        (reinterpret_cast<uintptr_t>(executed) + std::strlen(executed) + 1 + kPage - 1) & ~(kPage - 1);
    const uintptr_t high = (reinterpret_cast<uintptr_t>(__libc_stack_end) & ~(kPage - 1)) + kPage;
    if (high > mapping_end || limit <= mapping_end - high) return false;
    const uintptr_t size = (limit - (mapping_end - high)) & ~(kPage - 1);
    const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    if (size >= high || here >= high || here < high - size) return false;
    *bounds = StackBounds{high - size, high};
    return true;
}

}  // namespace

bool record_main_thread_stack_bounds() {
    if (main_thread_stack_from_auxv(&t_thread.stack_bounds)) return true;
    record_thread_stack_bounds();
    return false;
}

void record_thread_stack_bounds() {
    GuardScope guard;  // for the main thread, glibc reads /proc/self/maps with stdio
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
    void* base = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attributes, &base, &size) == 0)
        t_thread.stack_bounds =
            StackBounds{reinterpret_cast<uintptr_t>(base), reinterpret_cast<uintptr_t>(base) + size};
    pthread_attr_destroy(&attributes);
}

namespace {

struct ThreadStart {
    void* (*routine)(void*);
    void* argument;
};

void* start_thread_with_known_stack(void* start_pointer) {
    ThreadStart start = *static_cast<ThreadStart*>(start_pointer);
    real().free(start_pointer);
    record_thread_stack_bounds();
    return start.routine(start.argument);
}

using CreateFunction = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

}  // namespace

int create_thread_knowing_its_stack(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*),
                                    void* argument) {
    static constinit CreateFunction real_create = nullptr;
    ThreadStart* start;
    {
        GuardScope guard;
        if (real_create == nullptr) real_create = reinterpret_cast<CreateFunction>(dlsym(RTLD_NEXT, "pthread_create"));
        start = static_cast<ThreadStart*>(real().malloc(sizeof(ThreadStart)));
    }
    if (real_create == nullptr) return EAGAIN;
    if (start == nullptr) return real_create(thread, attributes, routine, argument);
    *start = ThreadStart{routine, argument};
    int result = real_create(thread, attributes, start_thread_with_known_stack, start);
    if (result != 0) real().free(start);
    return result;
}

}  // namespace leakwrap
