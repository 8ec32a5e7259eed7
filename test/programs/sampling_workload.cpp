// A known workload for sampling mode: kBlocks blocks of kBlockSize bytes from one function, the
// first kFreed of them freed again.
//
//   sampling_workload          the workload, then READY
//   sampling_workload chunks   prints, for a block of each size from 1 to kChunkSizes bytes, the
//                              word before it as glibc's chunk-size field reads it, and its
//                              usable size: what a block that carries no header of leakwrap's
//                              shows exactly as it does without the preload
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::sampling;

extern "C" __attribute__((noinline)) void* allocate_sampled_block() { return std::malloc(kBlockSize); }

namespace {

constexpr std::size_t kChunkSizes = 1000;

void print_chunks() {
    std::vector<void*> blocks;
    for (std::size_t size = 1; size <= kChunkSizes; ++size) {
        void* block = std::malloc(size);
        if (block == nullptr) fail("malloc");
        std::uint64_t word;
        std::memcpy(&word, static_cast<const char*>(block) - sizeof word, sizeof word);
        std::printf("%zu %llu %zu\n", size, static_cast<unsigned long long>(word & ~std::uint64_t{7}),
                    malloc_usable_size(block));
        blocks.push_back(block);
    }
    for (void* block : blocks) std::free(block);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "chunks") == 0) {
        print_chunks();
        return 0;
    }
    std::vector<void*> blocks(kBlocks);
    for (void*& block : blocks) block = allocate_sampled_block();
    for (std::size_t i = 0; i < kFreed; ++i) std::free(blocks[i]);
    announce_ready_and_wait_for_release();
    return 0;
}
