// Cost of the allocator entry points, to compare bare against LD_PRELOAD=libleakwrap.so in exact
// and in sampling mode (see run_bench.sh). Each iteration is one allocation and one free, so the
// preloaded ratio is the overhead a real program pays per malloc/free pair.
//
// In the multi-threaded variants (Threads(n)) Google Benchmark divides the wall time by the
// iterations of all threads: the reported time is the cost of one pair with n threads contending.
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <thread>

namespace {

void malloc_free_pair(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        void* block = std::malloc(size);
        benchmark::DoNotOptimize(block);
        std::free(block);
    }
}
BENCHMARK(malloc_free_pair)->Arg(16)->Arg(64)->Arg(256)->Arg(4096)->Arg(65536);
// The same pair in 1, 2 and 8 threads at once: contention on whatever the profiler shares.
BENCHMARK(malloc_free_pair)->Arg(64)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

// One allocation grown by doubling from 16 bytes to range(0) bytes, then freed.
void realloc_growth(benchmark::State& state) {
    const auto final_size = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        void* block = std::malloc(16);
        for (std::size_t size = 32; size <= final_size; size *= 2) {
            block = std::realloc(block, size);
            benchmark::DoNotOptimize(block);
        }
        std::free(block);
    }
}
BENCHMARK(realloc_growth)->Arg(4096)->Arg(65536);

// posix_memalign of range(1) bytes at an alignment of range(0), then free: the path that costs
// leakwrap a whole alignment of padding instead of its 16-byte header.
void aligned_alloc_free_pair(benchmark::State& state) {
    const auto alignment = static_cast<std::size_t>(state.range(0));
    const auto size = static_cast<std::size_t>(state.range(1));
    for (auto _ : state) {
        void* block = nullptr;
        if (posix_memalign(&block, alignment, size) != 0) {
            state.SkipWithError("posix_memalign failed");
            break;
        }
        benchmark::DoNotOptimize(block);
        std::free(block);
    }
}
BENCHMARK(aligned_alloc_free_pair)
    ->ArgNames({"align", "size"})
    ->Args({64, 64})
    ->Args({64, 1024})
    ->Args({4096, 64})
    ->Args({4096, 4096});

// Cross-thread free: threads work in producer/consumer pairs (even thread index allocates, the
// next odd one frees), handing blocks over through a single-producer single-consumer ring. Every
// thread runs the same number of iterations, so each ring is empty again when a run ends.
class HandoverRing {
public:
    static constexpr std::size_t capacity = 256;

    void push(void* block) {
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        while (tail - head_.load(std::memory_order_acquire) == capacity) std::this_thread::yield();
        slots_[tail % capacity] = block;
        tail_.store(tail + 1, std::memory_order_release);
    }

    void* pop() {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        while (tail_.load(std::memory_order_acquire) == head) std::this_thread::yield();
        void* block = slots_[head % capacity];
        head_.store(head + 1, std::memory_order_release);
        return block;
    }

private:
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
    alignas(64) std::array<void*, capacity> slots_{};
};

constexpr int max_cross_thread_pairs = 4;
std::array<HandoverRing, max_cross_thread_pairs> handover_rings;

void cross_thread_free(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    HandoverRing& ring = handover_rings[state.thread_index() / 2];
    const bool producer = state.thread_index() % 2 == 0;
    for (auto _ : state) {
        if (producer) {
            void* block = std::malloc(size);
            benchmark::DoNotOptimize(block);
            ring.push(block);
        } else {
            std::free(ring.pop());
        }
    }
}
BENCHMARK(cross_thread_free)->Arg(64)->Threads(2)->Threads(2 * max_cross_thread_pairs)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
