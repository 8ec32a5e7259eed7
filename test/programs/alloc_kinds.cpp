// Leaks known amounts through every allocation entry point, each from its own named function,
// and frees everything a "churn" function allocates. Also checks that every block it gets honours
// the requested alignment and size, because a profiler that breaks that breaks its target.
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::alloc_kinds;

namespace {

// Blocks that stay live until exit; a global keeps the compiler from proving them unused.
void* g_kept[1024];
std::size_t g_kept_count;

void keep(void* block) {
    if (g_kept_count == std::size(g_kept)) fail("too many kept blocks");
    g_kept[g_kept_count++] = block;
}

void check_block(const void* block, std::size_t alignment, std::size_t size) {
    if (block == nullptr) fail("allocation returned NULL");
    if (reinterpret_cast<std::uintptr_t>(block) % alignment != 0) fail("misaligned block");
    if (malloc_usable_size(const_cast<void*>(block)) < size) fail("usable size below request");
}

}  // namespace

extern "C" {

__attribute__((noinline)) void leak_malloc() {
    void* blocks[kMallocCount];
    for (auto& block : blocks) {
        block = std::malloc(kMallocSize);
        check_block(block, alignof(std::max_align_t), kMallocSize);
    }
    for (std::size_t i = 0; i < kMallocCount; ++i) {
        if (i < kMallocFreed)
            std::free(blocks[i]);
        else
            keep(blocks[i]);
    }
}

__attribute__((noinline)) void leak_calloc() {
    for (std::size_t i = 0; i < kCallocCount; ++i) {
        void* block = std::calloc(kCallocElements, kCallocElementSize);
        check_block(block, alignof(std::max_align_t), kCallocElements * kCallocElementSize);
        keep(block);
    }
}

__attribute__((noinline)) void leak_realloc_chain() {
    for (std::size_t chain = 0; chain < kReallocChains; ++chain) {
        void* block = std::malloc(kReallocChainSizes[0]);
        check_block(block, alignof(std::max_align_t), kReallocChainSizes[0]);
        for (std::size_t step = 1; step < kReallocChainLength; ++step) {
            block = std::realloc(block, kReallocChainSizes[step]);
            check_block(block, alignof(std::max_align_t), kReallocChainSizes[step]);
        }
        keep(block);
    }
}

__attribute__((noinline)) void leak_posix_memalign() {
    for (const AlignedRequest& request : kPosixMemalign) {
        for (std::size_t i = 0; i < request.count; ++i) {
            void* block = nullptr;
            if (posix_memalign(&block, request.alignment, request.size) != 0) fail("posix_memalign");
            check_block(block, request.alignment, request.size);
            keep(block);
        }
    }
}

__attribute__((noinline)) void leak_aligned_alloc() {
    for (const AlignedRequest& request : kAlignedAlloc) {
        for (std::size_t i = 0; i < request.count; ++i) {
            void* block = std::aligned_alloc(request.alignment, request.size);
            check_block(block, request.alignment, request.size);
            keep(block);
        }
    }
}

__attribute__((noinline)) void leak_memalign() {
    for (const AlignedRequest& request : kMemalign) {
        for (std::size_t i = 0; i < request.count; ++i) {
            void* block = memalign(request.alignment, request.size);
            check_block(block, request.alignment, request.size);
            keep(block);
        }
    }
}

__attribute__((noinline)) void leak_valloc() {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    for (std::size_t i = 0; i < kVallocCount; ++i) {
        void* block = valloc(kVallocSize);
        check_block(block, page, kVallocSize);
        keep(block);
    }
}

__attribute__((noinline)) void leak_pvalloc() {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    for (std::size_t i = 0; i < kPvallocCount; ++i) {
        void* block = pvalloc(kPvallocSize);
        check_block(block, page, kPvallocSize);
        keep(block);
    }
}

__attribute__((noinline)) void leak_page_aligned() {
    static void* blocks[kPageAlignedCount];
    for (auto& block : blocks) {
        if (posix_memalign(&block, 4096, kPageAlignedSize) != 0) block = nullptr;
        check_block(block, 4096, kPageAlignedSize);
        std::memset(block, 1, kPageAlignedSize);
    }
    for (std::size_t i = 0; i < kPageAlignedCount; ++i)
        if (i % kPageAlignedKeptEvery != 0) std::free(blocks[i]);
}

__attribute__((noinline)) void leak_cxx_new_array() {
    for (std::size_t i = 0; i < kNewCharArrayCount; ++i) {
        char* chars = new char[kNewCharArrayLength];
        check_block(chars, alignof(std::max_align_t), kNewCharArrayLength);
        keep(chars);
    }
    for (std::size_t i = 0; i < kNewIntArrayCount; ++i) {
        int* ints = new int[kNewIntArrayLength];
        check_block(ints, alignof(std::max_align_t), kNewIntArrayLength * sizeof(int));
        keep(ints);
    }
}

__attribute__((noinline)) void churn() {
    static_assert(kChurnAllocsPerRound == 7, "keep in step with the allocations below");
    for (std::size_t round = 0; round < kChurnRounds; ++round) {
        const std::size_t size = 1 + round * 37 % 3000;
        void* plain = std::malloc(size);
        void* zeroed = std::calloc(3, size);
        void* moved = std::realloc(std::malloc(size), 2 * size);
        void* aligned = nullptr;
        if (posix_memalign(&aligned, 512, size) != 0) fail("posix_memalign in churn");
        void* aligned_c11 = std::aligned_alloc(64, 64 * (1 + round % 4));
        char* chars = new char[size];
        check_block(plain, alignof(std::max_align_t), size);
        check_block(zeroed, alignof(std::max_align_t), 3 * size);
        check_block(moved, alignof(std::max_align_t), 2 * size);
        check_block(aligned, 512, size);
        check_block(aligned_c11, 64, 64);
        check_block(chars, alignof(std::max_align_t), size);
        std::free(plain);
        std::free(zeroed);
        std::free(moved);
        std::free(aligned);
        std::free(aligned_c11);
        delete[] chars;
    }
}

}  // extern "C"

int main() {
    leak_malloc();
    leak_calloc();
    leak_realloc_chain();
    leak_posix_memalign();
    leak_aligned_alloc();
    leak_memalign();
    leak_valloc();
    leak_pvalloc();
    leak_page_aligned();
    leak_cxx_new_array();
    churn();
    announce_ready_and_wait_for_release();
    return 0;
}
