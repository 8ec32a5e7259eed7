// SIGALRM arrives every 50 µs while the main loop allocates; the handler allocates and frees
// too, so signals land inside malloc, inside leakwrap's unwinding and inside its site table.
// The program must neither crash nor deadlock, and prints only what does not depend on timing.
//
// glibc's own malloc is not async-signal-safe; the sizes are chosen so that glibc alone is: each
// size keeps its own tcache bin stocked (see warm_up), so neither the handler nor the main loop
// ever takes an arena lock that the other could be holding.
#include <sys/time.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>

#include "handshake.h"

namespace {

// Four sizes in the main loop, at most kRing / 4 live blocks each: fewer than the seven blocks a
// tcache bin holds, so after the warm-up every malloc and free is served by the tcache.
constexpr std::size_t kMainSizes[] = {24, 56, 120, 248};
constexpr std::size_t kRing = 12;
// The handler's blocks sit in a bin of their own, with or without leakwrap's 16-byte header.
constexpr std::size_t kHandlerSize = 1000;
constexpr long kIterations = 400000;
constexpr long kSignalsWanted = 2000;

volatile sig_atomic_t g_signals = 0;

extern "C" __attribute__((noinline)) void handler_alloc_free(int) {
    auto* block = static_cast<volatile char*>(std::malloc(kHandlerSize));
    if (block == nullptr) std::abort();
    block[0] = 1;
    block[kHandlerSize - 1] = 2;
    std::free(const_cast<char*>(block));
    g_signals = g_signals + 1;
}

// Stocks the tcache bins of every size used later, for the requests as leakwrap makes them too.
void warm_up() {
    constexpr std::size_t kTcacheCount = 7, kLeakwrapHeader = 16;
    void* blocks[kTcacheCount];
    for (std::size_t size : {kMainSizes[0], kMainSizes[1], kMainSizes[2], kMainSizes[3], kHandlerSize}) {
        for (std::size_t request : {size, size - kLeakwrapHeader}) {
            for (auto& block : blocks) block = std::malloc(request);
            for (auto& block : blocks) std::free(block);
        }
    }
}

extern "C" __attribute__((noinline)) void* main_loop_alloc(std::size_t size) { return std::malloc(size); }

}  // namespace

int main() {
    warm_up();
    struct sigaction action {};
    action.sa_handler = handler_alloc_free;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGALRM, &action, nullptr) != 0) fail("sigaction");
    const itimerval every_50_microseconds{{0, 50}, {0, 50}};
    if (setitimer(ITIMER_REAL, &every_50_microseconds, nullptr) != 0) fail("setitimer");

    void* ring[kRing] = {};
    unsigned long checksum = 0;
    for (long i = 0; i < kIterations || g_signals < kSignalsWanted; ++i) {
        const std::size_t slot = static_cast<std::size_t>(i) % kRing;
        std::free(ring[slot]);
        const std::size_t size = kMainSizes[slot % std::size(kMainSizes)];
        auto* block = static_cast<unsigned char*>(main_loop_alloc(size));
        if (block == nullptr) fail("malloc in the main loop");
        std::memset(block, static_cast<int>(i), size);
        ring[slot] = block;
        if (i < kIterations) checksum = checksum * 31 + block[size - 1];
    }

    const itimerval stop{};
    setitimer(ITIMER_REAL, &stop, nullptr);
    for (void* block : ring) std::free(block);
    std::printf("%ld allocations, checksum %lu, and at least %ld signals handled\n", kIterations, checksum,
                kSignalsWanted);
    return 0;
}
