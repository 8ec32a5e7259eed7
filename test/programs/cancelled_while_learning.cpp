// Cancels threads while they call into plugin copies never called before: under the preload each
// first call makes the walk read the copy's unwind table from its file, with system calls that
// glibc's wrappers make cancellation points. A thread must act on its cancellation only where
// its program reaches one (pthread_testcancel after each call here), never inside malloc.
//
//   cancelled_while_learning <path of libtorture_plugin.so> <scratch directory>
//
// Prints "cancelled N calls C": N workers ended by cancellation (ground_truth.h says how many
// it starts), C calls of plugin_churn completed; then says READY and waits (handshake.h).
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"
#include "plugin_copy.h"

namespace {

using namespace ground_truth::cancelled_while_learning;

std::vector<PluginChurn> g_churns;
std::atomic<std::size_t> g_next_copy{0};
std::atomic<long long> g_calls{0};

// Calls the copies in turn, each round going on where the last one was cancelled.
void* call_new_copies(void*) {
    for (;;) {
        const std::size_t copy = g_next_copy.fetch_add(1) % g_churns.size();
        if (g_churns[copy](ground_truth::torture_plugin::kChurnRounds) == 0) fail("plugin_churn");
        g_calls.fetch_add(1);
        pthread_testcancel();
    }
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s <plugin.so> <scratch directory>\n", argv[0]);
        return 2;
    }
    g_churns = load_plugin_copies(argv[1], argv[2], kCopies);
    int cancelled = 0;
    for (int worker = 0; worker < kWorkers; ++worker) {
        pthread_t thread;
        if (pthread_create(&thread, nullptr, call_new_copies, nullptr) != 0) fail("pthread_create");
        usleep(1000 + 300 * worker);
        pthread_cancel(thread);
        void* result = nullptr;
        if (pthread_join(thread, &result) != 0) fail("pthread_join");
        cancelled += result == PTHREAD_CANCELED;
    }
    std::printf("cancelled %d calls %lld\n", cancelled, g_calls.load());
    announce_ready_and_wait_for_release();
    return 0;
}
