// Checks, inside one process, the glibc allocator behaviour that programs rely on. Run bare it
// pins down what glibc does; run under the preload it proves the interposer keeps all of it.
// Prints every mismatch and exits 1 if there was any.
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

extern "C" void* __libc_malloc(std::size_t size);

namespace {

int g_failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++g_failures;
    }
}

bool aligned(const void* block, std::size_t alignment) {
    return reinterpret_cast<std::uintptr_t>(block) % alignment == 0;
}

void fill(void* block, std::size_t size, unsigned char seed) {
    auto* bytes = static_cast<unsigned char*>(block);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(seed + i * 7);
}

bool filled(const void* block, std::size_t size, unsigned char seed) {
    const auto* bytes = static_cast<const unsigned char*>(block);
    for (std::size_t i = 0; i < size; ++i)
        if (bytes[i] != static_cast<unsigned char>(seed + i * 7)) return false;
    return true;
}

// Sizes come through volatiles so the compiler cannot fold or warn about the impossible requests.
volatile std::size_t g_size_max = SIZE_MAX;
volatile std::size_t g_ptrdiff_max_plus_one = static_cast<std::size_t>(PTRDIFF_MAX) + 1;

void null_and_zero_sizes() {
    std::free(nullptr);
    void* from_null = std::realloc(nullptr, 100);
    expect(from_null != nullptr && malloc_usable_size(from_null) >= 100, "realloc(NULL, n) acts as malloc");
    errno = 0;
    void* after_zero = std::realloc(from_null, 0);
    expect(after_zero == nullptr, "realloc(p, 0) frees and returns NULL");
    void* zero_a = std::malloc(0);
    void* zero_b = std::malloc(0);
    expect(zero_a != nullptr && zero_b != nullptr && zero_a != zero_b, "malloc(0) returns distinct blocks");
    std::free(zero_a);
    std::free(zero_b);
    expect(malloc_usable_size(nullptr) == 0, "malloc_usable_size(NULL) is 0");
}

void impossible_requests_fail_with_enomem() {
    errno = 0;
    expect(std::malloc(g_size_max) == nullptr && errno == ENOMEM, "malloc(SIZE_MAX) gives NULL+ENOMEM");
    errno = 0;
    expect(std::malloc(g_ptrdiff_max_plus_one) == nullptr && errno == ENOMEM,
           "malloc(PTRDIFF_MAX+1) gives NULL+ENOMEM");
    errno = 0;
    expect(std::calloc(g_size_max / 2, 3) == nullptr && errno == ENOMEM, "calloc overflow gives NULL+ENOMEM");
    errno = 0;
    expect(reallocarray(nullptr, g_size_max / 2, 3) == nullptr && errno == ENOMEM,
           "reallocarray overflow gives NULL+ENOMEM");
    void* block = std::malloc(16);
    errno = 0;
    expect(std::realloc(block, g_size_max) == nullptr && errno == ENOMEM, "realloc(p, SIZE_MAX) gives NULL+ENOMEM");
    std::free(block);  // a failed realloc leaves the block untouched
    // glibc 2.36: an alignment above SIZE_MAX / 2 + 1 is EINVAL; one up to it, rounded up to a
    // power of two, is a request no memory can meet, ENOMEM.
    const std::size_t top_power = g_size_max / 2 + 1;
    for (const std::size_t alignment : {top_power, top_power - 1, top_power / 2 + 1}) {
        for (void* (*aligned)(std::size_t, std::size_t) : {&memalign, &std::aligned_alloc}) {
            errno = 0;
            expect(aligned(alignment, 64) == nullptr && errno == ENOMEM,
                   "an alignment no memory can meet gives NULL+ENOMEM");
        }
    }
    for (const std::size_t alignment : {top_power + 1, g_size_max}) {
        errno = 0;
        expect(memalign(alignment, 64) == nullptr && errno == EINVAL, "an alignment above SIZE_MAX/2+1 gives EINVAL");
    }
}

void alignment_requests() {
    for (std::size_t bad : {std::size_t{0}, std::size_t{3}, std::size_t{4}, std::size_t{24}}) {
        void* block = reinterpret_cast<void*>(0x1);
        expect(posix_memalign(&block, bad, 64) == EINVAL, "posix_memalign rejects a bad alignment with EINVAL");
    }
    for (std::size_t alignment = sizeof(void*); alignment <= 65536; alignment *= 2) {
        void* blocks[2] = {nullptr, nullptr};
        for (void*& block : blocks) {
            expect(posix_memalign(&block, alignment, 100) == 0 && block != nullptr && aligned(block, alignment),
                   "posix_memalign honours a power-of-two alignment");
            expect(malloc_usable_size(block) >= 100, "posix_memalign block is large enough");
        }
        // All that malloc_usable_size reports is the program's: filling it reaches neither the
        // other block nor the bookkeeping in front of it, which free would then find broken.
        fill(blocks[0], malloc_usable_size(blocks[0]), 3);
        fill(blocks[1], malloc_usable_size(blocks[1]), 4);
        expect(filled(blocks[0], malloc_usable_size(blocks[0]), 3),
               "an aligned block's usable size overlaps no other block");
        for (void* block : blocks) std::free(block);
    }
    for (std::size_t alignment = 16; alignment <= 65536; alignment *= 2) {
        void* c11 = std::aligned_alloc(alignment, alignment * 2);
        expect(c11 != nullptr && aligned(c11, alignment), "aligned_alloc honours the alignment");
        void* legacy = memalign(alignment, 300);
        expect(legacy != nullptr && aligned(legacy, alignment), "memalign honours the alignment");
        expect(malloc_usable_size(legacy) >= 300, "memalign block is large enough");
        std::free(c11);
        std::free(legacy);
    }
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* page_block = valloc(123);
    expect(page_block != nullptr && aligned(page_block, page), "valloc is page-aligned");
    std::free(page_block);
    void* rounded = pvalloc(page + 1);
    expect(rounded != nullptr && aligned(rounded, page) && malloc_usable_size(rounded) >= 2 * page,
           "pvalloc is page-aligned and rounded up to whole pages");
    std::free(rounded);
    void* empty = pvalloc(0);
    expect(empty != nullptr && aligned(empty, page), "pvalloc(0) gives a usable page-aligned block");
    std::free(empty);
}

void usable_sizes() {
    for (std::size_t size = 0; size <= 70000; size = size * 3 / 2 + 1) {
        void* block = std::malloc(size);
        expect(block != nullptr && malloc_usable_size(block) >= size, "malloc_usable_size covers the request");
        std::memset(block, 0xAB, malloc_usable_size(block));  // the whole usable size is ours to write
        std::free(block);
    }
}

void realloc_preserves_contents() {
    void* block = std::malloc(100);
    fill(block, 100, 1);
    block = std::realloc(block, 100000);
    expect(block != nullptr && filled(block, 100, 1), "realloc growth keeps the contents");
    block = std::realloc(block, 40);
    expect(block != nullptr && filled(block, 40, 1), "realloc shrink keeps the contents");
    std::free(block);

    void* aligned_block = nullptr;
    if (posix_memalign(&aligned_block, 4096, 200) != 0) aligned_block = nullptr;
    expect(aligned_block != nullptr, "posix_memalign(4096, 200)");
    fill(aligned_block, 200, 9);
    aligned_block = std::realloc(aligned_block, 20000);
    expect(aligned_block != nullptr && filled(aligned_block, 200, 9), "realloc of an aligned block keeps the contents");
    aligned_block = std::realloc(aligned_block, 10);
    expect(aligned_block != nullptr && filled(aligned_block, 10, 9), "shrinking an aligned block keeps the contents");
    std::free(aligned_block);
}

void calloc_zeroes() {
    for (std::size_t size : {std::size_t{24}, std::size_t{1000}, std::size_t{200000}, std::size_t{4 << 20}}) {
        // Dirty a block of the same size first, so a recycled chunk would show stale bytes.
        void* dirty = std::malloc(size);
        std::memset(dirty, 0xEE, size);
        std::free(dirty);
        auto* zeroed = static_cast<unsigned char*>(std::calloc(1, size));
        bool all_zero = zeroed != nullptr;
        for (std::size_t i = 0; all_zero && i < size; ++i) all_zero = zeroed[i] == 0;
        expect(all_zero, "calloc memory is zeroed");
        std::free(zeroed);
    }
}

void foreign_blocks_pass_through() {
    void* foreign = __libc_malloc(64);
    expect(foreign != nullptr && malloc_usable_size(foreign) >= 64, "__libc_malloc block is usable");
    std::free(foreign);

    auto* grown = static_cast<char*>(__libc_malloc(32));
    fill(grown, 32, 5);
    grown = static_cast<char*>(std::realloc(grown, 5000));
    expect(grown != nullptr && filled(grown, 32, 5), "realloc of a __libc_malloc block keeps the contents");
    std::free(grown);
}

void libc_internal_allocations() {
    char* copy = strdup("leakwrap");
    expect(copy != nullptr && std::strcmp(copy, "leakwrap") == 0, "strdup");
    std::free(copy);

    char* buffer = nullptr;
    std::size_t length = 0;
    FILE* stream = open_memstream(&buffer, &length);
    for (int i = 0; i < 1000; ++i) std::fprintf(stream, "%d,", i);
    std::fclose(stream);
    expect(buffer != nullptr && length > 1000 && std::strncmp(buffer, "0,1,2,", 6) == 0, "open_memstream");
    std::free(buffer);
}

}  // namespace

int main() {
    null_and_zero_sizes();
    impossible_requests_fail_with_enomem();
    alignment_requests();
    usable_sizes();
    realloc_preserves_contents();
    calloc_zeroes();
    foreign_blocks_pass_through();
    libc_internal_allocations();
    if (g_failures != 0) {
        std::fprintf(stderr, "%d mismatch(es)\n", g_failures);
        return 1;
    }
    std::puts("all allocator semantics hold");
    return 0;
}
