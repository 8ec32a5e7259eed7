// Every symbol libleakwrap.so exports (the library is built with hidden visibility, and the
// libstdc++ linked into it is made local): the malloc family, which a preloaded library
// interposes for the whole process; _exit and _Exit, which skip destructors but still end the
// process normally; pthread_create, so that each thread learns its stack bounds before it runs;
// dl_iterate_phdr, so that a forked child knows whether the loader's lock may be held for good
// (fork_fence.h); the exec family, so that a segment says when exec replaced the image that
// wrote it (exec_calls.h); and the Ruby interpreter's start-up calls, to learn when its VM is
// ready.
//
// Each entry point only takes what its own frame alone can give (the program's return address
// and stack pointer) and tail-calls the function that does the work, so none leaves a frame.
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>

#include "block_header.h"
#include "caller.h"
#include "exec_calls.h"
#include "fork_fence.h"
#include "lifecycle.h"
#include "malloc_api.h"
#include "ruby_backtrace.h"
#include "thread_stacks.h"

using namespace leakwrap;

#define LEAKWRAP_EXPORT __attribute__((visibility("default")))

// execl, execle and execlp take their arguments as a null-terminated list, gathered here into an
// array on the stack as glibc does; execle's environment follows the null. A macro, since the
// array must live in the frame of the variadic function.
#define LEAKWRAP_GATHER_ARGUMENTS(first, argv, envp, with_environment)                \
    std::size_t count = 1;                                                            \
    {                                                                                 \
        va_list counting;                                                             \
        va_start(counting, first);                                                    \
        while (va_arg(counting, char*) != nullptr) ++count;                           \
        va_end(counting);                                                             \
    }                                                                                 \
    auto** argv = static_cast<char**>(__builtin_alloca((count + 1) * sizeof(char*))); \
    char** envp = environ;                                                            \
    {                                                                                 \
        va_list arguments;                                                            \
        va_start(arguments, first);                                                   \
        argv[0] = const_cast<char*>(first);                                           \
        for (std::size_t i = 1; i <= count; ++i) argv[i] = va_arg(arguments, char*);  \
        if (with_environment) envp = va_arg(arguments, char**);                       \
        va_end(arguments);                                                            \
    }

extern "C" {

LEAKWRAP_EXPORT void* malloc(std::size_t size) noexcept {
    if (sampler_leaves_bare(size)) return g_real.malloc(size);
    return allocate_plain(size, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT void free(void* p) noexcept {
    if (is_glibcs_bare_block(p)) return g_real.free(p);
    deallocate(p);
}

// glibc keeps cfree only as a compatibility symbol for old binaries.
LEAKWRAP_EXPORT void cfree(void* p) noexcept { free(p); }

LEAKWRAP_EXPORT void* calloc(std::size_t count, std::size_t size) noexcept {
    std::size_t bytes;
    if (!__builtin_mul_overflow(count, size, &bytes) && sampler_leaves_bare(bytes)) return g_real.calloc(count, size);
    return allocate_array(count, size, true, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT void* realloc(void* p, std::size_t size) noexcept { return reallocate(p, size, LEAKWRAP_CALLER()); }

LEAKWRAP_EXPORT void* reallocarray(void* p, std::size_t count, std::size_t size) noexcept {
    return reallocate_array(p, count, size, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
    return allocate_posix_aligned(out, alignment, size, LEAKWRAP_CALLER());
}

// In glibc 2.36 aligned_alloc is memalign (no extra checks of the alignment).
LEAKWRAP_EXPORT void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
    return allocate_aligned(alignment, size, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT void* memalign(std::size_t alignment, std::size_t size) noexcept {
    return allocate_aligned(alignment, size, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT void* valloc(std::size_t size) noexcept {
    return allocate(size, page_size(), false, LEAKWRAP_CALLER());
}

LEAKWRAP_EXPORT void* pvalloc(std::size_t size) noexcept { return allocate_whole_pages(size, LEAKWRAP_CALLER()); }

LEAKWRAP_EXPORT std::size_t malloc_usable_size(void* p) noexcept { return usable_size(p); }

LEAKWRAP_EXPORT __attribute__((noreturn)) void _exit(int status) { exit_now(status); }
LEAKWRAP_EXPORT __attribute__((noreturn)) void _Exit(int status) { exit_now(status); }

LEAKWRAP_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*),
                                   void* argument) {
    return create_thread_knowing_its_stack(thread, attributes, routine, argument);
}

LEAKWRAP_EXPORT int dl_iterate_phdr(int (*visit)(dl_phdr_info*, std::size_t, void*), void* data) {
    return iterate_loaded_modules(visit, data);
}

LEAKWRAP_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
    return exec_path(path, argv, envp);
}
LEAKWRAP_EXPORT int execv(const char* path, char* const argv[]) { return exec_path(path, argv, environ); }
LEAKWRAP_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
    return exec_searching_path(file, argv, envp);
}
LEAKWRAP_EXPORT int execvp(const char* file, char* const argv[]) { return exec_searching_path(file, argv, environ); }
LEAKWRAP_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) { return exec_open_file(fd, argv, envp); }
LEAKWRAP_EXPORT int execveat(int directory, const char* path, char* const argv[], char* const envp[], int flags) {
    return exec_at(directory, path, argv, envp, flags);
}

LEAKWRAP_EXPORT int execl(const char* path, const char* first, ...) {
    LEAKWRAP_GATHER_ARGUMENTS(first, argv, envp, false)
    return exec_path(path, argv, envp);
}
LEAKWRAP_EXPORT int execle(const char* path, const char* first, ...) {
    LEAKWRAP_GATHER_ARGUMENTS(first, argv, envp, true)
    return exec_path(path, argv, envp);
}
LEAKWRAP_EXPORT int execlp(const char* file, const char* first, ...) {
    LEAKWRAP_GATHER_ARGUMENTS(first, argv, envp, false)
    return exec_searching_path(file, argv, envp);
}

LEAKWRAP_EXPORT int ruby_setup(void) { return run_ruby_setup(); }
LEAKWRAP_EXPORT void ruby_init(void) { run_ruby_init(); }

}  // extern "C"
