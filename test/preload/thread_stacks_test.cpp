// The main thread's stack bounds, found at start-up from the auxiliary vector and the stack's
// size limit instead of glibc's read of /proc/self/maps: they must be glibc's own.
#include <gtest/gtest.h>
#include <pthread.h>

#include "os.h"
#include "thread_stacks.h"

namespace leakwrap {
namespace {

StackBounds bounds_from_glibc() {
    pthread_attr_t attributes;
    EXPECT_EQ(pthread_getattr_np(pthread_self(), &attributes), 0);
    void* base = nullptr;
    std::size_t size = 0;
    EXPECT_EQ(pthread_attr_getstack(&attributes, &base, &size), 0);
    pthread_attr_destroy(&attributes);
    return {reinterpret_cast<uintptr_t>(base), reinterpret_cast<uintptr_t>(base) + size};
}

TEST(ThreadStacks, TheMainThreadsBoundsAreGlibcs) {
    // gtest runs the tests on the main thread.
    const StackBounds saved = t_thread.stack_bounds;
    t_thread.stack_bounds = {};
    const bool without_glibc = record_main_thread_stack_bounds();
    const StackBounds found = t_thread.stack_bounds;
    t_thread.stack_bounds = saved;
    const StackBounds expected = bounds_from_glibc();
    EXPECT_EQ(found.high, expected.high);
    EXPECT_EQ(found.low, expected.low);
    const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    EXPECT_TRUE(here >= found.low && here < found.high);
    // A limited stack (the default) is found from the auxiliary vector; an unlimited one by glibc.
    EXPECT_EQ(without_glibc, os::stack_size_limit() != 0);
}

}  // namespace
}  // namespace leakwrap
