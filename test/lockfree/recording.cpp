// libleakwrap.so's recording paths without its interposers: the driver behind recording.h
// (lifecycle.cpp's globals come from test/support/lifecycle_stand_in.cpp).
#include "recording.h"

#include <cstring>

#include "bins.h"
#include "call_site_cache.h"
#include "caller.h"
#include "config.h"
#include "guard.h"
#include "lifecycle.h"
#include "modules.h"
#include "ruby_backtrace.h"
#include "segment.h"
#include "site_counters.h"
#include "allocation_site.h"
#include "stack_capture.h"
#include "thread_stacks.h"
#include "thread_state.h"

namespace leakwrap::recording {
namespace {
constinit bool g_process_state_ready = false;
constinit bool g_recording = false;
}  // namespace

bool start(const Options& options) {
    stop();
    GuardScope guard;
    Config config{};
    config.depth = options.depth;
    config.max_sites = options.max_sites;
    g_config = config;
    if (!create_segment(config, 0)) return false;
    if (!init_allocation_sites()) {
        unlink_segment();
        return false;
    }
    // Process-wide state the preload sets up once (pthread keys, unwinder, Ruby probe).
    if (!g_process_state_ready) {
        init_bin_shards();
        init_stack_capture();
        init_call_site_cache();
        init_ruby_backtrace();
        g_process_state_ready = true;
    }
    record_thread_stack_bounds();
    scan_modules();
    g_recording = true;
    return true;
}

void stop() {
    if (g_recording) unlink_segment();
    g_recording = false;
}

std::string segment_path() {
    return std::string(layout::kShmDirectory) + "/" + layout::kSegmentPrefix + std::to_string(g_segment.header->pid);
}

void enter_thread() { record_thread_stack_bounds(); }

// As malloc_api.cpp's account_allocation in exact mode, entered like malloc: the caller context
// is taken in this, the exported function's own frame.
__attribute__((noinline)) uint32_t record_allocation(uint64_t size) {
    CallerContext caller = LEAKWRAP_CALLER();
    GuardScope guard;
    const uint32_t size_class = layout::size_class_of(size);
    count_bin_allocation(size_class, size);
    uint32_t site = site_for_allocation(size_class, caller);
    count_allocation(site, size);
    return site;
}

// As malloc_api.cpp's account_free.
__attribute__((noinline)) void record_free(uint32_t site, uint64_t size) {
    count_bin_free(layout::size_class_of(size), size);
    if (site < g_segment.site_capacity) count_free(site, size);
}

const std::byte* take_fork_copy() {
    GuardScope guard;
    snapshot_segment_for_fork();
    return t_thread.fork_snapshot.copy;
}

void drop_fork_copy() {
    GuardScope guard;
    discard_fork_snapshot();
}

bool intern(std::string_view text, layout::StringRef* out) {
    GuardScope guard;  // as every caller in the preload holds it (a pool page may be reserved)
    return intern_string(text.data(), text.size(), out);
}

std::string_view pooled(const layout::StringRef& ref) { return {pool_string(ref.offset), ref.length}; }

const layout::Header& header() { return *g_segment.header; }
const layout::SiteRecord& site(uint32_t index) { return *site_record(index); }
const layout::StackRecord& stack_of_site(uint32_t index) { return *stack_record(site_record(index)->stack); }
const uint64_t* site_frames(uint32_t index) { return stack_frames(stack_record(site_record(index)->stack)); }

}  // namespace leakwrap::recording
