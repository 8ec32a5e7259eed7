// Larson-style server churn: a shared array of blocks, split into one region per thread; each
// thread replaces random blocks of its region with new blocks of random size (16-512 bytes), the
// way a server's request handlers replace their buffers. Every round starts fresh threads that
// take over the region of another thread of the previous round, so most frees are of blocks that
// another (now finished) thread allocated, as in larson.
//
// A fixed amount of work; prints only numbers that depend on nothing but the arguments.
// Usage: workload_server_churn [threads=2]
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int rounds = 8;
constexpr std::size_t slots_per_region = 10000;
constexpr std::size_t replacements_per_thread_and_round = 700'000;
constexpr std::size_t min_size = 16;
constexpr std::size_t max_size = 512;

// A cache line each: a region's counter is written by one thread at every replacement, and two
// regions sharing a line made the workload's speed hang on where malloc placed their array
// (twice as slow when a profiler's start-up allocations moved it by a few bytes).
struct alignas(64) Region {
    std::vector<void*> blocks = std::vector<void*>(slots_per_region, nullptr);
    std::uint64_t bytes_allocated = 0;  // over the whole run
};

// Every block starts with its own size, checked when it is freed.
void* new_block(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) {
        std::fputs("server_churn: out of memory\n", stderr);
        std::exit(1);
    }
    std::memcpy(block, &size, sizeof size);
    static_cast<unsigned char*>(block)[size - 1] = static_cast<unsigned char>(size);
    return block;
}

void free_block(void* block) {
    std::size_t size;
    std::memcpy(&size, block, sizeof size);
    if (size < min_size || size > max_size ||
        static_cast<unsigned char*>(block)[size - 1] != static_cast<unsigned char>(size)) {
        std::fputs("server_churn: corrupted block\n", stderr);
        std::exit(1);
    }
    std::free(block);
}

void churn(Region& region, std::uint64_t seed) {
    std::mt19937_64 random(seed);
    for (std::size_t i = 0; i < replacements_per_thread_and_round; ++i) {
        const std::size_t slot = random() % slots_per_region;
        const std::size_t size = min_size + random() % (max_size - min_size + 1);
        if (region.blocks[slot] != nullptr) free_block(region.blocks[slot]);
        region.blocks[slot] = new_block(size);
        region.bytes_allocated += size;
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::stoi(argv[1]) : 2;
    if (threads < 1 || threads > 64) {
        std::fputs("usage: workload_server_churn [threads 1-64]\n", stderr);
        return 2;
    }
    std::vector<Region> regions(static_cast<std::size_t>(threads));
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::thread> workers;
        for (int thread = 0; thread < threads; ++thread) {
            const int region = (thread + round) % threads;
            const auto seed = static_cast<std::uint64_t>(round) * 1000 + static_cast<std::uint64_t>(region);
            workers.emplace_back(churn, std::ref(regions[static_cast<std::size_t>(region)]), seed);
        }
        for (auto& worker : workers) worker.join();
    }
    std::uint64_t bytes_allocated = 0;
    for (auto& region : regions) {
        bytes_allocated += region.bytes_allocated;
        for (void* block : region.blocks) {
            if (block != nullptr) free_block(block);
        }
    }
    std::printf("server_churn: %d threads, %d rounds, %zu replacements, %llu bytes allocated\n", threads, rounds,
                static_cast<std::size_t>(rounds) * threads * replacements_per_thread_and_round,
                static_cast<unsigned long long>(bytes_allocated));
}
