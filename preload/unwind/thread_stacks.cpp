#include "thread_stacks.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>

#include "guard.h"
#include "real_allocator.h"

namespace leakwrap {

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
