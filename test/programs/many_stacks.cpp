// Leaks one block from each of 2^kLevels call stacks, as an interpreter makes them: a recursion
// whose every level calls the next from one of two call sites, so that the stacks differ only in
// their return addresses. 32,768 sites in a few functions, built in a second (many_sites makes
// its 256 sites of as many template instances, which would not scale). With --paced it pauses
// 100 us after each, so that its site table grows for seconds while a test reads it.
#include <time.h>

#include <cstdlib>
#include <cstring>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::many_stacks;

namespace {
void* g_blocks[kStacks];
std::size_t g_leaked = 0;
volatile unsigned g_after_call = 0;  // distinct code after each call site keeps them apart
}  // namespace

__attribute__((noinline)) void many_stacks_leak() {
    g_blocks[g_leaked] = std::malloc(kBlockSize);
    if (g_blocks[g_leaked++] == nullptr) fail("malloc in many_stacks_leak");
}

__attribute__((noinline)) void many_stacks_level(unsigned depth, unsigned path) {
    if (depth == kLevels) {
        many_stacks_leak();
        return;
    }
    if (path & 1) {
        many_stacks_level(depth + 1, path >> 1);
        g_after_call = g_after_call + 1;
    } else {
        many_stacks_level(depth + 1, path >> 1);
        g_after_call = g_after_call + 2;
    }
}

int main(int argc, char** argv) {
    const bool paced = argc > 1 && std::strcmp(argv[1], "--paced") == 0;
    for (unsigned path = 0; path < kStacks; ++path) {
        many_stacks_level(0, path);
        if (paced) {
            const timespec pause{0, 100 * 1000};
            nanosleep(&pause, nullptr);
        }
    }
    announce_ready_and_wait_for_release();
    return 0;
}
