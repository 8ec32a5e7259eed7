// A plugin for torture_dlopen: it allocates for itself and for its caller. Loaded with
// RTLD_DEEPBIND its own references to malloc and free bind to libc's, past the preload, so the
// blocks it hands out are foreign to leakwrap.
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {

// Grows and shrinks a buffer `rounds` times; returns a checksum of what it wrote.
__attribute__((visibility("default"))) unsigned long plugin_churn(unsigned rounds) {
    unsigned long checksum = 0;
    char* buffer = nullptr;
    for (unsigned round = 1; round <= rounds; ++round) {
        const std::size_t size = 1 + (round * 7919u) % 5000;
        auto* grown = static_cast<char*>(std::realloc(buffer, size));
        if (grown == nullptr) std::abort();
        buffer = grown;
        std::memset(buffer, static_cast<int>(round), size);
        void* scratch = std::malloc(round % 200);
        std::free(scratch);
        checksum = checksum * 31 + static_cast<unsigned char>(buffer[size - 1]) + size;
    }
    std::free(buffer);
    return checksum;
}

// A text the caller owns and frees.
__attribute__((visibility("default"))) char* plugin_describe(unsigned number) {
    char* text = static_cast<char*>(std::malloc(64));
    if (text == nullptr) std::abort();
    std::snprintf(text, 64, "plugin call %u", number);
    return text;
}

}  // extern "C"
