#include "modules.h"

#include <elf.h>
#include <link.h>

#include <atomic>

#include "loaded_module.h"
#include "debug_check.h"
#include "fork_fence.h"
#include "frame_sizes.h"
#include "guard.h"
#include "proc_self.h"
#include "segment.h"

namespace leakwrap {
namespace {

using layout::ModuleRecord;

// Record indices of the modules mapped at the last scan (process-private).
constexpr uint32_t kMaxTracked = 2048;
constinit uint32_t g_mapped[kMaxTracked]{};
constinit bool g_still_mapped[kMaxTracked]{};
constinit uint32_t g_mapped_count = 0;
// The loader's counters at the last scan. Written under g_scanning but read without it (a hint
// whether to scan), so atomic: relaxed is enough, the scan itself is ordered by g_scanning.
constinit std::atomic<unsigned long long> g_seen_adds{0};
constinit std::atomic<unsigned long long> g_seen_subs{0};
constinit std::atomic_flag g_scanning = ATOMIC_FLAG_INIT;

struct LoaderCounters {
    unsigned long long adds = 0, subs = 0;
};

int read_loader_counters(dl_phdr_info* info, size_t size, void* out) {
    if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *static_cast<LoaderCounters*>(out) = LoaderCounters{info->dlpi_adds, info->dlpi_subs};
    return 1;  // the counters are the same in every entry: one is enough
}

struct ScanContext {
    uint32_t generation;
};

void append_module(const dl_phdr_info* info, uint64_t start, uint64_t end, uint32_t generation) {
    layout::Header* h = g_segment.header;
    std::atomic_ref<uint32_t> claimed(h->modules_claimed);
    uint32_t index = claimed.load(std::memory_order_relaxed);
    if (index >= h->module_capacity || g_mapped_count >= kMaxTracked) return;
    if (!reserve_segment_bytes(h->modules_offset + uint64_t{index} * h->module_record_size, h->module_record_size))
        return;
    ModuleRecord* record = module_record(index);
    const char* path = info->dlpi_name;
    if (path == nullptr || path[0] == '\0') path = current_process_identity().exe_path;
    intern_string(path, std::strlen(path), &record->path);
    record->load_generation = generation;
    record->unload_generation = layout::kStillLoaded;
    record->load_bias = info->dlpi_addr;
    record->start = start;
    record->end = end;
    record->build_id_length = build_id_of_loaded(info, record->build_id, layout::kBuildIdMax);
    std::atomic_ref<uint32_t>(record->state).store(layout::kReady, std::memory_order_release);
    claimed.store(index + 1, std::memory_order_release);
    g_mapped[g_mapped_count] = index;
    g_still_mapped[g_mapped_count] = true;
    ++g_mapped_count;
}

int visit_module(dl_phdr_info* info, size_t, void* context) {
    uintptr_t start, end;
    address_range_of_loaded(info, &start, &end);
    if (start >= end) return 0;
    for (uint32_t i = 0; i < g_mapped_count; ++i) {
        const ModuleRecord* known = module_record(g_mapped[i]);
        if (known->load_bias == info->dlpi_addr && known->start == start && known->end == end) {
            g_still_mapped[i] = true;
            return 0;
        }
    }
    append_module(info, start, end, static_cast<ScanContext*>(context)->generation);
    return 0;
}

// Caller holds g_scanning.
void rescan(const LoaderCounters& counters) {
    layout::Header* h = g_segment.header;
    std::atomic_ref<uint32_t> generation(h->module_generation);
    ScanContext context{generation.load(std::memory_order_relaxed) + 1};
    uint32_t already_known = g_mapped_count;
    for (uint32_t i = 0; i < already_known; ++i) g_still_mapped[i] = false;
    dl_iterate_phdr(visit_module, &context);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < g_mapped_count; ++i) {
        if (g_still_mapped[i]) {
            g_mapped[kept++] = g_mapped[i];
            continue;
        }
        forget_frame_sizes();  // its addresses may hold other code from now on
        std::atomic_ref<uint32_t>(module_record(g_mapped[i])->unload_generation)
            .store(context.generation, std::memory_order_release);
    }
    g_mapped_count = kept;
    g_seen_adds.store(counters.adds, std::memory_order_relaxed);
    g_seen_subs.store(counters.subs, std::memory_order_relaxed);
    generation.store(context.generation, std::memory_order_release);
}

}  // namespace

void scan_modules() {
    if (g_segment.base == nullptr) return;
    ForkFencedSection section;
    if (!section.entered()) return;  // the first stack's module check scans
    LoaderCounters counters;
    dl_iterate_phdr(read_loader_counters, &counters);
    while (g_scanning.test_and_set(std::memory_order_acquire)) {
    }
    g_mapped_count = 0;
    rescan(counters);
    g_scanning.clear(std::memory_order_release);
}

uint32_t current_module_generation() {
    LEAKWRAP_CHECK(inside_leakwrap());
    layout::Header* h = g_segment.header;
    ForkFencedSection section;
    if (section.entered()) {
        LoaderCounters counters;
        dl_iterate_phdr(read_loader_counters, &counters);
        // Never wait for a scan in progress: the scanning thread may be waiting for the loader
        // lock that this thread's caller holds. Then, as when a fork turns the check away, the
        // stack is taken to be of the modules known at the last scan; the reader falls back to
        // address ranges.
        if ((counters.adds != g_seen_adds.load(std::memory_order_relaxed) ||
             counters.subs != g_seen_subs.load(std::memory_order_relaxed)) &&
            !g_scanning.test_and_set(std::memory_order_acquire)) {
            rescan(counters);
            g_scanning.clear(std::memory_order_release);
        }
    }
    return std::atomic_ref<uint32_t>(h->module_generation).load(std::memory_order_acquire);
}

}  // namespace leakwrap
