// Target of the focus tests (test/e2e/focus_test.cpp): leaks that --focus, --ignore,
// --hide-runtime, --site and the short C++ names are checked on, as ground_truth.h describes.
// Says READY with every block allocated and waits for the release line.
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::focus_targets;

namespace focus_targets {

// Its member's demangled name spells out every template argument, allocators included: some
// 400 characters that text output shortens.
template <class Key, class Value>
struct Registry {
    __attribute__((noinline)) void remember(const Key&, const Value&) {
        for (std::size_t i = 0; i < kRegistryCount; ++i) {
            char* block = new char[kRegistrySize];
            std::memset(block, 0x55, kRegistrySize);
        }
    }
};

}  // namespace focus_targets

__attribute__((noinline)) void leak_in_plain_function() {
    for (std::size_t i = 0; i < kPlainCount; ++i) {
        void* block = std::malloc(kPlainSize);
        if (block == nullptr) fail("malloc");
        std::memset(block, 0x11, kPlainSize);
    }
}

__attribute__((noinline)) void leak_through_strdup() {
    // Not a std::string: its own block would make a second row under this function.
    static char text[kStrdupLength + 1];
    std::memset(text, 'x', kStrdupLength);
    for (std::size_t i = 0; i < kStrdupCount; ++i)
        if (strdup(text) == nullptr) fail("strdup");
}

int main() {
    using Key = std::map<std::string, std::vector<std::pair<int, std::string>>>;
    using Value = std::vector<std::map<int, std::string>>;
    leak_in_plain_function();
    leak_through_strdup();
    focus_targets::Registry<Key, Value>().remember(Key{}, Value{});
    announce_ready_and_wait_for_release();
    return 0;
}
