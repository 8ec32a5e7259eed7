// The bounds of each thread's own stack, which the call-site cache needs to know it may read
// there. They are asked for (pthread_getattr_np) only where it is safe: at start-up for the
// main thread and at the start of each thread created with pthread_create — never from inside
// malloc, where glibc may already hold the very lock pthread_getattr_np takes.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "thread_state.h"

namespace leakwrap {

// pthread_create: the new thread records its stack bounds before it runs any of the program's
// code (the wrapper of its start routine tail-calls the routine, leaving no frame behind).
int create_thread_knowing_its_stack(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*),
                                    void* argument);

// Records the calling thread's stack bounds; call outside any allocation.
void record_thread_stack_bounds();
// The same for the main thread, at start-up; true if they were found without asking glibc, which
// reads /proc/self/maps for them.
bool record_main_thread_stack_bounds();

}  // namespace leakwrap
