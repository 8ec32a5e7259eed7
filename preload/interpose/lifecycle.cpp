#include "lifecycle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <urcu-bp.h>

#include <cstring>

#include "allocation_site.h"
#include "allocator_statistics.h"
#include "bins.h"
#include "call_site_cache.h"
#include "dead_segments.h"
#include "exec_calls.h"
#include "fork_fence.h"
#include "guard.h"
#include "modules.h"
#include "os.h"
#include "real_allocator.h"
#include "ruby_backtrace.h"
#include "ruby_frame_tree.h"
#include "sampler.h"
#include "segment.h"
#include "stack_capture.h"
#include "thread_stacks.h"

namespace leakwrap {

constinit ModePage g_mode_page{kUninitialized};
constinit uint64_t g_tag_secret = 0;
constinit Config g_config{};

namespace {

uint64_t random_secret() {
    // AT_RANDOM: 16 random bytes the kernel hands every process; no syscall, no file.
    uint64_t secret = 0x5bd1e9955bd1e995ull;
    if (auto* bytes = reinterpret_cast<const unsigned char*>(getauxval(AT_RANDOM)))
        std::memcpy(&secret, bytes + 8, sizeof secret);
    return secret ^ reinterpret_cast<uintptr_t>(&secret);
}

// The forking thread runs leakwrap-internal from "prepare" until its counters are on the
// child's own segment (I5): in the child it is the only thread, so nothing lands in the parent's
// segment, and the parent's other threads keep counting meanwhile. Before anything else it
// waits out the other threads' work with the loader and libunwind (fork_fence.h).
void before_fork() {
    ++t_thread.inside_leakwrap;
    fence_before_fork();
    snapshot_segment_for_fork();
    urcu_bp_before_fork();
}

void after_fork_in_parent() {
    urcu_bp_after_fork_parent();
    discard_fork_snapshot();
    open_fence_in_parent();
    --t_thread.inside_leakwrap;
}

void after_fork_in_child() {
    urcu_bp_after_fork_child();
    open_fence_in_child();
    reset_allocator_statistics_in_child();
    reset_bin_shards_after_fork();
    reset_ruby_frame_tree_after_fork();
    // The mode's page was zeroed in the child (lifecycle.h).
    g_mode_page.mode.store(adopt_fork_snapshot_in_child(g_config) ? kTracking : kPassThrough,
                           std::memory_order_release);
    --t_thread.inside_leakwrap;
}

bool start_tracking() {
    g_config = read_config();
    if (g_config.disable) return false;
    g_sample_interval = g_config.sample_interval;
    g_unsampled_blocks_bare = g_sample_interval != 0 && g_real_is_glibc;
    // Before creating its own: the room freed may be what the new segment needs.
    trim_dead_segments(g_config);
    if (!create_segment(g_config, g_unsampled_blocks_bare ? layout::kBinsSampled : 0)) return false;
    if (!init_allocation_sites()) {
        unlink_segment();
        return false;
    }
    init_bin_shards();
    init_stack_capture();
    init_call_site_cache();
    (void)record_main_thread_stack_bounds();
    init_ruby_backtrace();
    scan_modules();
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    return true;
}

// A normal exit: the segment goes away, or with LEAKWRAP_KEEP=1 stays marked as exited.
// Async-signal-safe (no allocation), since _exit() may be called from a signal handler.
void finish_normal_exit() {
    if (!tracking_enabled() || g_segment.base == nullptr) return;
    if (g_segment.header->pid != getpid()) return;
    if (g_config.keep) {
        std::atomic_ref<uint32_t>(g_segment.header->process_state)
            .store(layout::kProcessExited, std::memory_order_release);
    } else {
        unlink_segment();
    }
}

__attribute__((destructor)) void finish_at_exit() { finish_normal_exit(); }

using ExitFunction = void (*)(int);
constinit ExitFunction g_real_exit = nullptr;

__attribute__((constructor)) void initialize_at_load() {
    int expected = kUninitialized;
    if (!g_mode_page.mode.compare_exchange_strong(expected, kInitializing, std::memory_order_acq_rel)) return;
    bool tracking;
    {
        GuardScope guard;
        resolve_real_allocator();
        g_real_exit = reinterpret_cast<ExitFunction>(dlsym(RTLD_NEXT, "_exit"));
        resolve_exec_functions();
        g_tag_secret = random_secret();
        tracking = start_tracking();
    }
    os::wipe_on_fork(&g_mode_page, sizeof g_mode_page);
    g_mode_page.mode.store(tracking ? kTracking : kPassThrough, std::memory_order_release);
}

}  // namespace

[[noreturn]] void exit_now(int status) {
    finish_normal_exit();
    if (g_real_exit != nullptr) g_real_exit(status);
    for (;;) syscall(SYS_exit_group, status);
}

}  // namespace leakwrap
