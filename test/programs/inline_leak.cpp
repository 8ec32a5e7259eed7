// Target of the inline-frame tests: a call site whose malloc the compiler inlined, at -O2, into
// the function that called it, once directly and once through a second inlined function. A
// report must name every inlined function with its own line, and each caller with the line of
// its call (test/e2e/inline_frames_test.cpp). The tests find the lines by the markers of
// ground_truth::inline_leak in this file's comments.
#include <cstdlib>
#include <cstring>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::inline_leak;

namespace {

char* volatile g_kept[2 * kRequests];  // never freed: the leak

}  // namespace

extern "C" {

__attribute__((always_inline)) static inline char* make_buffer(std::size_t size, unsigned tag) {
    char* buffer = static_cast<char*>(std::malloc(size));  // inline_leak: make_buffer mallocs
    if (buffer == nullptr) fail("malloc");
    std::memset(buffer, static_cast<int>(tag), size);
    return buffer;
}

}  // extern "C"

namespace requests {

__attribute__((always_inline)) inline char* prepare(unsigned request) {
    return make_buffer(kNestedSize, request + 1);  // inline_leak: prepare calls make_buffer
}

}  // namespace requests

// noipa: no clone (handle.constprop) may take its name.
extern "C" __attribute__((noinline, noipa)) void handle(unsigned request) {
    g_kept[2 * request] = make_buffer(kDirectSize, request);  // inline_leak: handle calls make_buffer
    g_kept[2 * request + 1] = requests::prepare(request);     // inline_leak: handle calls prepare
}

int main() {
    for (unsigned request = 0; request < kRequests; ++request) handle(request);  // inline_leak: main calls handle
    announce_ready_and_wait_for_release();
    return 0;
}
