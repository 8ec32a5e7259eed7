// A parent leaks at parent_site_alloc and forks; the child leaks at child_site_alloc and frees
// part of what it inherited. Each process must report only its own view. The parent prints
// "CHILD <pid>" and READY only once the child has done its work, and the child lives until the
// parent is released, so a harness can read both segments while both processes are alive.
//
//   fork_leak [_Fork]
//
// With `_Fork` the child is made by glibc's _Fork(), which runs no fork handlers: the preload
// cannot give it a segment of its own, and must count none of its work in the parent's.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::fork_leak;

extern "C" pid_t _Fork();  // glibc 2.34

namespace {
void* g_parent_blocks[kParentBlocks];
void* g_child_blocks[kChildBlocks];
}  // namespace

extern "C" {

__attribute__((noinline)) void* parent_site_alloc(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in parent_site_alloc");
    return block;
}

__attribute__((noinline)) void* child_site_alloc(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in child_site_alloc");
    return block;
}

}  // extern "C"

namespace {

[[noreturn]] void run_child(int done_fd, int release_fd) {
    for (auto& block : g_child_blocks) block = child_site_alloc(kChildBlockSize);
    for (std::size_t i = 0; i < kInheritedFreedByChild; ++i) std::free(g_parent_blocks[i]);
    if (write(done_fd, "x", 1) != 1) fail("child: write done");
    char byte;
    // Returns 0 (EOF) once the parent closes its end: that is the release.
    if (read(release_fd, &byte, 1) != 0) fail("child: unexpected data on release pipe");
    std::exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    const bool without_handlers = argc == 2 && std::strcmp(argv[1], "_Fork") == 0;
    if (argc > 2 || (argc == 2 && !without_handlers)) {
        std::fprintf(stderr, "usage: %s [_Fork]\n", argv[0]);
        return 2;
    }
    for (auto& block : g_parent_blocks) block = parent_site_alloc(kParentBlockSize);

    int done[2], release[2];
    if (pipe(done) != 0 || pipe(release) != 0) fail("pipe");
    std::fflush(stdout);
    const pid_t child = without_handlers ? _Fork() : fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        close(done[0]);
        close(release[1]);
        run_child(done[1], release[0]);
    }
    close(done[1]);
    close(release[0]);

    char byte;
    if (read(done[0], &byte, 1) != 1) fail("parent: child died before finishing its work");
    std::printf("CHILD %d\n", static_cast<int>(child));
    announce_ready_and_wait_for_release();

    close(release[1]);
    int status = 0;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("child failed");
    return 0;
}
