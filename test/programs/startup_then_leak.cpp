// Start-up memory, then a leak: allocates kStartupBlocks blocks at load_configuration, keeps
// them, waits until kLeakStartMs after main() began, then leaks kLeaks blocks at
// leak_request_buffer over the next second. Says READY and waits; the test reads which of the
// live memory was born after the start-up.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::startup_then_leak;

namespace {
void* g_configuration[kStartupBlocks];
void* g_leaked[kLeaks];
}  // namespace

extern "C" __attribute__((noinline)) void* load_configuration(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in load_configuration");
    std::memset(block, 1, size);
    return block;
}

extern "C" __attribute__((noinline)) void* leak_request_buffer(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) fail("malloc in leak_request_buffer");
    std::memset(block, 2, size);
    return block;
}

int main() {
    const auto started = std::chrono::steady_clock::now();
    for (void*& block : g_configuration) block = load_configuration(kStartupBlockSize);
    std::this_thread::sleep_until(started + std::chrono::milliseconds(kLeakStartMs));
    for (void*& block : g_leaked) {
        block = leak_request_buffer(kLeakSize);
        std::this_thread::sleep_for(std::chrono::milliseconds(kLeakEveryMs));
    }
    announce_ready_and_wait_for_release();
    return 0;
}
