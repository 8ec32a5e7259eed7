// A module of its own for frame_sizes_test.cpp: a frame in another file than the test's, whose
// rule is read from this file's unwind table, to tell a file replaced on disk from the one loaded.
extern "C" __attribute__((noinline)) void call_through(void (*function)(void*), void* argument) {
    volatile char scratch[40];
    scratch[0] = 1;
    function(argument);
    asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}
