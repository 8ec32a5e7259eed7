// A known workload for sampling mode: kBlocks blocks of kBlockSize bytes from one function, the
// first kFreed of them freed again.
#include <cstdlib>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::sampling;

extern "C" __attribute__((noinline)) void* allocate_sampled_block() { return std::malloc(kBlockSize); }

int main() {
    std::vector<void*> blocks(kBlocks);
    for (void*& block : blocks) block = allocate_sampled_block();
    for (std::size_t i = 0; i < kFreed; ++i) std::free(blocks[i]);
    announce_ready_and_wait_for_release();
    return 0;
}
