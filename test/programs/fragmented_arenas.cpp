// Threads that leave glibc's arenas full of free memory: one after another, each allocates
// small blocks (100 to 500 bytes) at churn_small_blocks, keeps every kKeepEvery-th (the last
// one included, so that no arena can shrink from its top) and frees the rest, then stays alive
// and idle, so that its arena stays its own. Under glibc each thread gets an arena of its own
// (up to 8 per core), which keeps that thread's freed memory; with MALLOC_ARENA_MAX=2 the later
// threads reuse the two arenas' free memory instead. With `leak`, the threads free nothing: the
// same memory is then held by live blocks at churn_small_blocks. With `quiet`, the threads free
// as with `free`, then idle without allocating at all, as a process left alone does; after
// READY, each line `tick` on stdin makes the main thread allocate one more block (kept, so that
// it frees nothing), answered by TICKED, which the allocator's statistics are read with when due;
// an empty line releases it.
//
//   fragmented_arenas [free|leak|quiet] [GO_FILE]
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
constexpr std::size_t kMostTicks = 4096;
void* g_ticks[kMostTicks];
std::size_t g_tick_count = 0;
}  // namespace

extern "C" __attribute__((noinline)) void* churn_small_blocks(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in churn_small_blocks");
    std::memset(block, 1, size);  // resident, as a string's bytes are
    return block;
}

namespace {

enum class Mode { free, leak, quiet };

void churn(int thread, Mode mode, std::atomic<int>& done) {
    const bool leak = mode == Mode::leak;
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
        if (tick % 20 == 0 && mode != Mode::quiet) std::free(churn_small_blocks(block_size(0)));
    }
}

// Reads lines with read(2) (stdio would allocate stdin's buffer): `tick` allocates a block.
void tick_on_command() {
    std::fputs("READY\n", stdout);
    std::fflush(stdout);
    char line[16];
    std::size_t length = 0;
    char byte;
    while (read(STDIN_FILENO, &byte, 1) == 1) {
        if (byte != '\n') {
            if (length < sizeof line) line[length++] = byte;
            continue;
        }
        if (length == 0) return;
        if (length != 4 || std::memcmp(line, "tick", 4) != 0) fail("a command other than tick");
        if (g_tick_count == kMostTicks) fail("too many ticks");
        g_ticks[g_tick_count++] = churn_small_blocks(block_size(0));
        std::fputs("TICKED\n", stdout);
        std::fflush(stdout);
        length = 0;
    }
}

}  // namespace

int main(int argc, char** argv) {
    Mode mode = Mode::free;
    if (argc >= 2 && std::strcmp(argv[1], "leak") == 0)
        mode = Mode::leak;
    else if (argc >= 2 && std::strcmp(argv[1], "quiet") == 0)
        mode = Mode::quiet;
    if (argc > 3 || (argc >= 2 && mode == Mode::free && std::strcmp(argv[1], "free") != 0)) {
        std::fprintf(stderr, "usage: %s [free|leak|quiet] [GO_FILE]\n", argv[0]);
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
        threads.emplace_back(churn, thread, mode, std::ref(done));
        while (done.load() != thread + 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::size_t blocks = 0, bytes = 0;
    for (int thread = 0; thread < kThreads; ++thread) {
        blocks += g_kept[thread].size();
        bytes += g_kept_bytes[thread];
    }
    std::printf("KEPT %zu %zu\n", blocks, bytes);
    if (mode == Mode::quiet)
        tick_on_command();
    else
        announce_ready_and_wait_for_release();
    g_released.store(true);
    for (std::thread& thread : threads) thread.join();
    for (const auto& kept : g_kept)
        for (void* block : kept) std::free(block);
    for (std::size_t tick = 0; tick < g_tick_count; ++tick) std::free(g_ticks[tick]);
    return 0;
}
