/*
 * NativeThread.allocate(count, size): a native thread, made by this extension, mallocs `count`
 * blocks of `size` bytes and keeps them; the call returns once that thread is done, and lets
 * the other Ruby threads run meanwhile. What a C library's background thread does inside a Ruby
 * process: allocating with no Ruby frame and no GVL, so leakwrap must give it no Ruby location.
 */
#include <ruby.h>
#include <ruby/thread.h>

#include <pthread.h>
#include <stdlib.h>

struct allocation_job {
    long count;
    size_t size;
};

/* noinline: the tests find these blocks by this function's name. */
static __attribute__((noinline)) void* allocate_in_native_thread(void* argument) {
    const struct allocation_job* job = argument;
    for (long i = 0; i < job->count; ++i) {
        if (malloc(job->size) == NULL) return argument; /* any non-NULL result reports the failure */
    }
    return NULL;
}

static void* join_native_thread(void* thread) {
    void* result = NULL;
    pthread_join(*(pthread_t*)thread, &result);
    return result;
}

static VALUE native_thread_allocate(VALUE self, VALUE count, VALUE size) {
    (void)self;
    struct allocation_job job = {NUM2LONG(count), NUM2SIZET(size)};
    pthread_t thread;
    const int error = pthread_create(&thread, NULL, allocate_in_native_thread, &job);
    if (error != 0) rb_syserr_fail(error, "pthread_create");
    if (rb_thread_call_without_gvl(join_native_thread, &thread, NULL, NULL) != NULL)
        rb_raise(rb_eNoMemError, "malloc failed in the native thread");
    return Qnil;
}

void Init_native_thread(void) {
    VALUE module = rb_define_module("NativeThread");
    rb_define_module_function(module, "allocate", native_thread_allocate, 2);
}
