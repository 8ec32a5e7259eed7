// Cost of the allocator entry points, to compare bare against LD_PRELOAD=libleakwrap.so
// (see run_bench.sh). Each iteration is one allocation and one free, so the preloaded ratio is
// the overhead a real program pays per malloc/free pair.
#include <benchmark/benchmark.h>

#include <cstdlib>

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

}  // namespace

BENCHMARK_MAIN();
