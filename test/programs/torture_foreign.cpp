// Blocks that leakwrap did not hand out, from glibc's __libc_* entry points, reach the
// interposed free, realloc and malloc_usable_size in bulk and in every shape: small, large
// (mmapped), over-aligned, zeroed. They must pass through untouched. Prints a checksum of the
// contents it checked, so a run under the preload must print the same.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "handshake.h"

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_realloc(void* block, std::size_t size);
}

namespace {

constexpr std::size_t kBlocks = 20000;

struct Foreign {
    unsigned char* address;
    std::size_t size;
};

std::size_t size_of(std::size_t i) { return i % 50 == 0 ? 200000 + i : 1 + (i * 7919) % 3000; }

Foreign make_foreign(std::size_t i) {
    const std::size_t size = size_of(i);
    void* block = nullptr;
    switch (i % 4) {
        case 0: block = __libc_malloc(size); break;
        case 1: block = __libc_calloc(1, size); break;
        case 2: block = __libc_memalign(std::size_t{32} << (i % 8), size); break;
        case 3: block = __libc_realloc(__libc_malloc(size / 2 + 1), size); break;
    }
    if (block == nullptr) fail("__libc_* allocation");
    auto* bytes = static_cast<unsigned char*>(block);
    for (std::size_t b = 0; b < size; ++b) bytes[b] = static_cast<unsigned char>(i + b);
    return {bytes, size};
}

unsigned long checksum_of(const Foreign& block, std::size_t i) {
    unsigned long checksum = 0;
    for (std::size_t b = 0; b < block.size; ++b) {
        if (block.address[b] != static_cast<unsigned char>(i + b)) fail("foreign contents changed");
        checksum += block.address[b];
    }
    return checksum;
}

}  // namespace

int main() {
    std::vector<Foreign> blocks;
    for (std::size_t i = 0; i < kBlocks; ++i) blocks.push_back(make_foreign(i));

    unsigned long checksum = 0;
    for (std::size_t i = 0; i < kBlocks; ++i) {
        Foreign& block = blocks[i];
        if (malloc_usable_size(block.address) < block.size) fail("usable size of a foreign block");
        if (i % 3 == 0) {
            // realloc of a foreign block keeps its contents, whichever way it goes.
            const std::size_t kept = block.size;
            block.address = static_cast<unsigned char*>(std::realloc(block.address, i % 2 ? kept * 2 : kept / 2 + 1));
            if (block.address == nullptr) fail("realloc of a foreign block");
            block.size = i % 2 ? kept : kept / 2 + 1;
        }
        checksum += checksum_of(block, i);
        std::free(block.address);
    }
    std::printf("%zu foreign blocks, checksum %lu\n", kBlocks, checksum);
    return 0;
}
