// Target of the time-series tests (test/timeseries): three call sites that behave differently
// over time, a steady leak, a cache that fills up to a bound, and short-lived temporaries; and,
// when asked, memory that the process maps outside malloc, which RSS shows and no site holds.
//
// Usage: steady_leak PERIOD_MS [TICKS [MAP_KIB]]
// Says READY, then waits for SIGUSR1 before the first tick, so that a watcher can take its first
// sample before anything grows. Ticks every PERIOD_MS until TICKS ticks are done (0 or absent:
// no limit) or a line (or EOF) arrives on stdin, then exits normally. With MAP_KIB, each tick
// also maps that many KiB of anonymous memory, touches every page and never unmaps it.
#include <poll.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "handshake.h"
#include "steady_leak.h"

using namespace steady_leak;

// Plain external functions, outside any namespace, so that reports name them exactly.
std::array<void*, kCacheCapacity> cache{};
std::size_t cache_next = 0;  // the oldest entry once the cache is full

__attribute__((noinline)) void leak_steadily() {
    for (std::size_t i = 0; i < kLeaksPerTick; ++i) {
        void* block = std::malloc(kLeakSize);
        if (block == nullptr) fail("malloc");
        std::memset(block, 0x11, kLeakSize);
    }
}

__attribute__((noinline)) void fill_bounded_cache() {
    for (std::size_t i = 0; i < kCacheInsertsPerTick; ++i) {
        std::free(cache[cache_next]);  // evicts the oldest entry, or frees nullptr while filling
        cache[cache_next] = std::malloc(kCacheEntrySize);
        if (cache[cache_next] == nullptr) fail("malloc");
        std::memset(cache[cache_next], 0x22, kCacheEntrySize);
        cache_next = (cache_next + 1) % kCacheCapacity;
    }
}

__attribute__((noinline)) void churn_temporaries() {
    std::array<void*, kChurnPerTick> temporaries{};
    for (void*& block : temporaries) {
        block = std::malloc(kChurnSize);
        if (block == nullptr) fail("malloc");
        std::memset(block, 0x33, kChurnSize);
    }
    for (void* block : temporaries) std::free(block);
}

__attribute__((noinline)) void map_outside_malloc(std::size_t kib) {
    if (kib == 0) return;
    void* pages = mmap(nullptr, kib * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) fail("mmap");
    std::memset(pages, 0x44, kib * 1024);
}

__attribute__((noinline)) void tick(std::size_t map_kib) {
    leak_steadily();
    fill_bounded_cache();
    churn_temporaries();
    map_outside_malloc(map_kib);
}

// True once stdin has a line or EOF, waiting at most timeout_ms (-1: no limit) for it or for
// the signal on signal_fd (-1: none).
bool stop_requested(int timeout_ms, int signal_fd) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (poll(fds, signal_fd < 0 ? 1 : 2, timeout_ms) < 0) fail("poll");
    return fds[0].revents != 0;
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) fail("usage: steady_leak PERIOD_MS [TICKS [MAP_KIB]]");
    const int period_ms = std::atoi(argv[1]);
    const long ticks = argc >= 3 ? std::atol(argv[2]) : 0;
    const long map_kib = argc == 4 ? std::atol(argv[3]) : 0;
    if (period_ms <= 0 || ticks < 0 || map_kib < 0) fail("PERIOD_MS must be positive, TICKS and MAP_KIB not negative");

    sigset_t start_signal;
    sigemptyset(&start_signal);
    sigaddset(&start_signal, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &start_signal, nullptr) != 0) fail("sigprocmask");
    const int signal_fd = signalfd(-1, &start_signal, SFD_CLOEXEC);
    if (signal_fd < 0) fail("signalfd");

    std::fputs("READY\n", stdout);
    std::fflush(stdout);
    if (stop_requested(-1, signal_fd)) return 0;
    for (long done = 0; ticks == 0 || done < ticks; ++done) {
        tick(static_cast<std::size_t>(map_kib));
        if (stop_requested(period_ms, -1)) break;
    }
    return 0;
}
