#include "code_range.h"

#include <dlfcn.h>
#include <link.h>

#include "fork_fence.h"

namespace leakwrap {
namespace {

struct Search {
    uintptr_t base;
    CodeRange range;
};

int visit(dl_phdr_info* info, size_t, void* context) {
    auto* search = static_cast<Search*>(context);
    if (info->dlpi_addr != search->base) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
        uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        CodeRange& range = search->range;
        if (range.begin == range.end || begin < range.begin) range.begin = begin;
        if (begin + ph.p_memsz > range.end) range.end = begin + ph.p_memsz;
    }
    return 1;
}

}  // namespace

CodeRange code_range_of(const void* address) {
    Dl_info info{};
    if (address == nullptr || dladdr(address, &info) == 0) return {};
    // dli_fbase is the mapping's start; dlpi_addr the load bias. They agree for shared
    // objects and PIE executables; a non-PIE executable has bias 0.
    Search search{reinterpret_cast<uintptr_t>(info.dli_fbase), {}};
    ForkFencedSection section;
    if (!section.entered()) return {};
    if (dl_iterate_phdr(visit, &search) == 0) {
        search.base = 0;
        dl_iterate_phdr(visit, &search);
    }
    return search.range;
}

}  // namespace leakwrap
