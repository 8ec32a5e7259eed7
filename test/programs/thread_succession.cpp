// Threads that start one round after another, as a server starting a thread per connection:
// each thread's allocations are counted by the call-site cache that an earlier thread of the
// process used (leakwrap keeps the caches of exited threads for the next ones), and two threads
// of each round take and give back caches at the same time. The threads of even and odd rounds
// reach one malloc caller through different functions, at the same depth and on stacks glibc
// reuses, so only the frames above the caller tell their sites apart.
#include <cstdlib>
#include <thread>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::thread_succession;

namespace {
void* g_kept[kRounds][kThreadsPerRound][kLivePerThread];
}

extern "C" {

__attribute__((noinline)) void* succession_alloc() {
    void* block = std::malloc(kBlockSize);
    if (block == nullptr) fail("malloc in succession_alloc");
    return block;
}

// Keeps every other block of the thread's in `kept`, frees the rest.
__attribute__((noinline)) void allocate_blocks(void** kept) {
    for (std::size_t i = 0; i < kBlocksPerThread; ++i) {
        void* block = succession_alloc();
        if (i % 2 == 0)
            kept[i / 2] = block;
        else
            std::free(block);
    }
}

__attribute__((noinline)) void left_path(void** kept) { allocate_blocks(kept); }
__attribute__((noinline)) void right_path(void** kept) { allocate_blocks(kept); }

}  // extern "C"

int main() {
    for (std::size_t round = 0; round < kRounds; ++round) {
        std::thread threads[kThreadsPerRound];
        for (std::size_t i = 0; i < kThreadsPerRound; ++i)
            threads[i] = std::thread(round % 2 == 0 ? left_path : right_path, g_kept[round][i]);
        for (std::thread& thread : threads) thread.join();
    }
    announce_ready_and_wait_for_release();
    return 0;
}
