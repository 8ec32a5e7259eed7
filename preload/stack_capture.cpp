#include "stack_capture.h"

#include <dlfcn.h>
#include <link.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "leakwrap/segment_layout.h"

namespace leakwrap {
namespace {

constinit uintptr_t g_own_begin = 0;
constinit uintptr_t g_own_end = 0;

// Frames of libleakwrap.so (the capture function, the malloc wrapper) that precede the caller.
constexpr int kOwnFramesSlack = 4;

int find_own_range(dl_phdr_info* info, size_t, void* own_base) {
    if (info->dlpi_addr != reinterpret_cast<uintptr_t>(own_base)) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
        uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        if (g_own_begin == 0 || begin < g_own_begin) g_own_begin = begin;
        if (begin + ph.p_memsz > g_own_end) g_own_end = begin + ph.p_memsz;
    }
    return 1;
}

}  // namespace

void init_stack_capture() {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&capture_stack), &info) != 0)
        dl_iterate_phdr(find_own_range, info.dli_fbase);
}

uint32_t capture_stack(uint64_t* frames, uint32_t max_depth) {
    void* raw[layout::kMaxDepth + kOwnFramesSlack];
    int captured = unw_backtrace(raw, static_cast<int>(max_depth) + kOwnFramesSlack);
    int first = 0;
    while (first < captured) {
        auto address = reinterpret_cast<uintptr_t>(raw[first]);
        if (address < g_own_begin || address >= g_own_end) break;
        ++first;
    }
    uint32_t kept = 0;
    for (int i = first; i < captured && kept < max_depth; ++i)
        frames[kept++] = reinterpret_cast<uintptr_t>(raw[i]);
    return kept;
}

}  // namespace leakwrap
