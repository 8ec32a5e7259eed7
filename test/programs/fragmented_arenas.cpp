// Threads that leave glibc's arenas full of free memory: one after another, each allocates
// small blocks (100 to 500 bytes) at churn_small_blocks, keeps every kKeepEvery-th (the last
// one included, so that no arena can shrink from its top) and frees the rest, then stays alive
// and idle, so that its arena stays its own. Under glibc each thread gets an arena of its own
// (up to 8 per core), which keeps that thread's freed memory; with MALLOC_ARENA_MAX=2 the later
// threads reuse the two arenas' free memory instead. With `leak`, the threads free nothing: the
// same memory is then held by live blocks at churn_small_blocks.
//
//   fragmented_arenas [free|leak] [GO_FILE]
//
// With GO_FILE, it says WAITING and churns only once that file exists (so that a watch can take
// a sample first). Prints "KEPT <blocks> <bytes>" (the blocks alive at churn_small_blocks), then
// READY.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::fragmented_arenas;

namespace {
std::vector<void*> g_kept[kThreads];
std::size_t g_kept_bytes[kThreads];
std::atomic<bool> g_released{false};
}  // namespace

extern "C" __attribute__((noinline)) void* churn_small_blocks(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in churn_small_blocks");
    std::memset(block, 1, size);  // resident, as a string's bytes are
    return block;
}

namespace {

void churn(int thread, bool leak, std::atomic<int>& done) {
    std::vector<void*> blocks(kBlocksPerThread);
    for (std::size_t i = 0; i < kBlocksPerThread; ++i) blocks[i] = churn_small_blocks(block_size(i));
    for (std::size_t i = 0; i < kBlocksPerThread; ++i) {
        if (leak || i % kKeepEvery == kKeepEvery - 1 || i + 1 == kBlocksPerThread) {
            g_kept[thread].push_back(blocks[i]);
            g_kept_bytes[thread] += block_size(i);
        } else
            std::free(blocks[i]);
    }
    done.store(thread + 1);
    // Idle, as a server's threads are between requests, but for a small allocation now and then:
    // the allocator's statistics are read by a thread that allocates (segment/allocator_statistics.h),
    // so that their readings go on after the churn.
    for (int tick = 0; !g_released.load(); ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (tick % 20 == 0) std::free(churn_small_blocks(block_size(0)));
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool leak = argc >= 2 && std::strcmp(argv[1], "leak") == 0;
    if (argc > 3 || (argc >= 2 && !leak && std::strcmp(argv[1], "free") != 0)) {
        std::fprintf(stderr, "usage: %s [free|leak] [GO_FILE]\n", argv[0]);
        return 2;
    }
    if (argc == 3) {
        std::puts("WAITING");
        std::fflush(stdout);
        while (access(argv[2], F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (auto& kept : g_kept) kept.reserve(kBlocksPerThread);
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (int thread = 0; thread < kThreads; ++thread) {
        threads.emplace_back(churn, thread, leak, std::ref(done));
        while (done.load() != thread + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::size_t blocks = 0, bytes = 0;
    for (int thread = 0; thread < kThreads; ++thread) {
        blocks += g_kept[thread].size();
        bytes += g_kept_bytes[thread];
    }
    std::printf("KEPT %zu %zu\n", blocks, bytes);
    announce_ready_and_wait_for_release();
    g_released.store(true);
    for (std::thread& thread : threads) thread.join();
    for (const auto& kept : g_kept)
        for (void* block : kept) std::free(block);
    return 0;
}
