// fork() as servers and shells use it: a process that holds a few thousand blocks from a few
// hundred call sites forks children that exit at once, one after another. So nearly all of the
// cost is fork's and the child's exit, the part a profiler's fork handlers add to.
//
// A fixed amount of work; prints only numbers that depend on nothing but the arguments.
// Usage: workload_fork_exit [children=2000]
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace {

constexpr int kHeldBlocks = 4000;
void* g_held[kHeldBlocks];

// Blocks from 200 call sites: the callers differ by the template argument.
template <int kSite>
__attribute__((noinline)) void hold_blocks(int first) {
    for (int i = first; i < kHeldBlocks; i += 200) {
        g_held[i] = std::malloc(16 + kSite);
        if (g_held[i] == nullptr) std::exit(1);
    }
}

template <int... kSites>
void hold_from_sites(std::integer_sequence<int, kSites...>) {
    (hold_blocks<kSites>(kSites), ...);
}

}  // namespace

int main(int argc, char** argv) {
    const int children = argc > 1 ? std::atoi(argv[1]) : 2000;
    hold_from_sites(std::make_integer_sequence<int, 200>{});
    int exited = 0;
    for (int i = 0; i < children; ++i) {
        const pid_t child = fork();
        if (child < 0) return 1;
        if (child == 0) _exit(0);
        int status = 0;
        if (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++exited;
    }
    std::size_t held = 0;
    for (void* block : g_held) held += block != nullptr;
    std::printf("%d children exited, %zu blocks held\n", exited, held);
    return 0;
}
