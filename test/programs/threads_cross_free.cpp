// Eight threads allocate at one named site and each frees part of its neighbour's blocks, while
// all of them churn malloc/free at a second site: counters must stay exact under contention and
// a free must be charged to the site that allocated the block, whichever thread frees it.
#include <barrier>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::threads_cross_free;

namespace {
void* g_blocks[kThreads][kBlocksPerThread];
}

extern "C" {

__attribute__((noinline)) void* handoff_alloc(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in handoff_alloc");
    return block;
}

__attribute__((noinline)) void churn_alloc_free() {
    for (std::size_t i = 0; i < kChurnPerThread; ++i) {
        void* block = std::malloc(kChurnSize);
        if (block == nullptr) fail("malloc in churn_alloc_free");
        static_cast<volatile char*>(block)[0] = 1;
        std::free(block);
    }
}

}  // extern "C"

int main() {
    std::barrier all_allocated(static_cast<std::ptrdiff_t>(kThreads));
    std::vector<std::thread> threads;
    for (std::size_t self = 0; self < kThreads; ++self) {
        threads.emplace_back([self, &all_allocated] {
            for (auto& block : g_blocks[self]) block = handoff_alloc(block_size_of_thread(self));
            churn_alloc_free();
            all_allocated.arrive_and_wait();
            const std::size_t previous = (self + kThreads - 1) % kThreads;
            for (std::size_t i = 0; i < kFreedByNextThread; ++i) std::free(g_blocks[previous][i]);
        });
    }
    for (auto& thread : threads) thread.join();
    announce_ready_and_wait_for_release();
    return 0;
}
