// Several threads fork at once while another thread allocates, frees and leaks: the fork
// handlers of concurrent forks run at the same time in one process (glibc 2.36 runs them
// outside its atfork lock). Every child allocates at its own site and exits, or execs.
//
//   concurrent_forks <forking threads> <forks per thread> [exec]
//
// The last child of the first forking thread does not exit (nor exec) until the parent is
// released, so that its segment can be read. The parent prints "HELD <pid>" for it, "LEAKED <n>"
// (the blocks it left at leak_beside_forks), "FAILED CHILDREN <n>" (children that did not exit
// 0), then READY; once released it lets the held child go and exits 0 only if that one did.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "handshake.h"

namespace {

constexpr std::size_t kChildBlocks = 64, kLeakEvery = 97;

std::atomic<bool> g_stop{false};
std::atomic<int> g_failed_children{0};
std::atomic<pid_t> g_held_child{0};
int g_held_done[2], g_held_release[2];
std::vector<void*> g_leaked;  // owned by the allocating thread until it is joined

}  // namespace

extern "C" {

__attribute__((noinline)) void* leak_beside_forks(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in leak_beside_forks");
    return block;
}

__attribute__((noinline)) void* allocate_in_child(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) _exit(3);
    return block;
}

}  // extern "C"

namespace {

void allocate_beside_forks() {
    std::vector<void*> churn(128, nullptr);
    for (std::size_t round = 0; !g_stop.load(std::memory_order_relaxed); ++round) {
        void*& slot = churn[round % churn.size()];
        std::free(slot);
        slot = std::malloc(16 + round % 700);
        if (slot == nullptr) fail("malloc beside the forks");
        if (round % kLeakEvery == 0) g_leaked.push_back(leak_beside_forks(24 + round % 40));
    }
    for (void* block : churn) std::free(block);
}

[[noreturn]] void run_child(bool exec, bool held) {
    void* blocks[kChildBlocks];
    for (std::size_t i = 0; i < kChildBlocks; ++i) blocks[i] = allocate_in_child(32 + i);
    for (std::size_t i = 0; i < kChildBlocks; i += 2) std::free(blocks[i]);
    if (held) {
        close(g_held_release[1]);  // the parent's copy alone keeps the release open
        char byte = 'x';
        if (write(g_held_done[1], &byte, 1) != 1) _exit(5);
        // EOF once the parent closes its end (and its children forked meanwhile have exited).
        if (read(g_held_release[0], &byte, 1) != 0) _exit(6);
        _exit(0);
    }
    if (exec) {
        char* const argv[] = {const_cast<char*>("true"), nullptr};
        execv("/bin/true", argv);
        _exit(4);
    }
    _exit(0);
}

void fork_children(int forks, bool exec, bool hold_last) {
    for (int i = 0; i < forks; ++i) {
        const bool held = hold_last && i == forks - 1;
        const pid_t child = fork();
        if (child < 0) fail("fork");
        if (child == 0) run_child(exec, held);
        if (held) {
            char byte;
            if (read(g_held_done[0], &byte, 1) != 1) fail("the held child did not do its work");
            g_held_child.store(child);
            continue;
        }
        int status = 0;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            g_failed_children.fetch_add(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool exec = argc == 4 && std::strcmp(argv[3], "exec") == 0;
    const int threads = argc >= 3 ? std::atoi(argv[1]) : 0;
    const int forks = argc >= 3 ? std::atoi(argv[2]) : 0;
    if (argc < 3 || argc > 4 || (argc == 4 && !exec) || threads <= 0 || forks <= 0) {
        std::fprintf(stderr, "usage: %s <forking threads> <forks per thread> [exec]\n", argv[0]);
        return 2;
    }
    if (pipe2(g_held_done, O_CLOEXEC) != 0 || pipe2(g_held_release, O_CLOEXEC) != 0) fail("pipe");
    g_leaked.reserve(1 << 20);
    std::thread allocator(allocate_beside_forks);
    std::vector<std::thread> forkers;
    for (int t = 0; t < threads; ++t) forkers.emplace_back(fork_children, forks, exec, t == 0);
    for (std::thread& forker : forkers) forker.join();
    g_stop.store(true);
    allocator.join();

    std::printf("HELD %d\nLEAKED %zu\nFAILED CHILDREN %d\n", static_cast<int>(g_held_child.load()), g_leaked.size(),
                g_failed_children.load());
    announce_ready_and_wait_for_release();
    for (void* block : g_leaked) std::free(block);
    close(g_held_release[1]);
    int status = 0;
    if (waitpid(g_held_child.load(), &status, 0) != g_held_child.load() || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        fail("the held child");
    return 0;
}
