#include "fork_fence.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

#include "debug_check.h"
#include "guard.h"
#include "os.h"
#include "thread_state.h"

namespace leakwrap {
namespace {

// Both sides use sequentially consistent order, as in Dekker's mutual exclusion: a thread adds
// itself to g_sections_inside and then reads g_forks_preparing; a fork adds itself to
// g_forks_preparing and then reads g_sections_inside. One of the two sees the other.
constinit std::atomic<uint32_t> g_sections_inside{0};
constinit std::atomic<uint32_t> g_forks_preparing{0};
// In a child whose parent forked while a section may have been under way: nothing is entered.
constinit std::atomic<bool> g_fence_closed_for_good{false};
// dl_iterate_phdr() calls under way, in every thread: counted before glibc's takes the loader's
// lock and until after it released it, so that a child's copy that reads 0 was forked with the
// lock free.
constinit std::atomic<uint32_t> g_loader_iterations{0};

using LoaderIteration = int (*)(LoadedModuleVisitor, void*);
constinit std::atomic<LoaderIteration> g_real_iteration{nullptr};

// Microseconds of work, unless the section's thread waits for a lock that the forking thread
// holds: the bound is for that case, and a child forked after it does no fenced work.
constexpr uint64_t kWaitNanoseconds = 1'000'000'000;
constexpr int kYieldsBeforeSleeping = 64;
constexpr uint64_t kSleepNanoseconds = 50'000;

bool wait_for_other_threads_sections() {
    const uint32_t own = t_thread.fork_fenced_sections;
    const uint64_t deadline = os::monotonic_nanoseconds() + kWaitNanoseconds;
    for (int attempt = 0;; ++attempt) {
        if (g_sections_inside.load(std::memory_order_seq_cst) == own) return true;
        if (os::monotonic_nanoseconds() > deadline) return false;
        if (attempt < kYieldsBeforeSleeping)
            os::yield_processor();
        else
            os::sleep_nanoseconds(kSleepNanoseconds);
    }
}

}  // namespace

int iterate_loaded_modules(LoadedModuleVisitor visit, void* data) {
    LoaderIteration iterate = g_real_iteration.load(std::memory_order_acquire);
    if (iterate == nullptr) {
        GuardScope guard;  // dlsym may allocate
        iterate = reinterpret_cast<LoaderIteration>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
        if (iterate == nullptr) return 0;
        g_real_iteration.store(iterate, std::memory_order_release);
    }
    g_loader_iterations.fetch_add(1, std::memory_order_seq_cst);
    const int result = iterate(visit, data);
    g_loader_iterations.fetch_sub(1, std::memory_order_seq_cst);
    return result;
}

bool enter_fork_fenced_section() {
    g_sections_inside.fetch_add(1, std::memory_order_seq_cst);
    if (g_forks_preparing.load(std::memory_order_seq_cst) != 0 ||
        g_fence_closed_for_good.load(std::memory_order_relaxed)) {
        g_sections_inside.fetch_sub(1, std::memory_order_seq_cst);
        return false;
    }
    ++t_thread.fork_fenced_sections;
    return true;
}

void leave_fork_fenced_section() {
    LEAKWRAP_CHECK(t_thread.fork_fenced_sections > 0);
    --t_thread.fork_fenced_sections;
    g_sections_inside.fetch_sub(1, std::memory_order_seq_cst);
}

void fence_before_fork() {
    g_forks_preparing.fetch_add(1, std::memory_order_seq_cst);
    t_thread.fork_outwaited_sections = wait_for_other_threads_sections();
}

void open_fence_in_parent() { g_forks_preparing.fetch_sub(1, std::memory_order_seq_cst); }

void open_fence_in_child() {
    // The child's one thread is the forking one: only its own sections are under way.
    g_sections_inside.store(t_thread.fork_fenced_sections, std::memory_order_relaxed);
    g_forks_preparing.store(0, std::memory_order_relaxed);
    // The copy of the count is the parent's at the fork: a thread that was inside glibc's
    // dl_iterate_phdr() then, this one included, left the loader's lock held for good.
    if (!t_thread.fork_outwaited_sections || g_loader_iterations.load(std::memory_order_relaxed) != 0)
        g_fence_closed_for_good.store(true, std::memory_order_relaxed);
}

}  // namespace leakwrap
