// Leaks one block from each of kRoutes call chains that differ only far from malloc: every chain
// ends in route() -> handle() -> leak_leaf(). With a small site table, the chains that come after
// it is nearly full share one reduced stack (the innermost frames), where the leak stays visible.
#include <array>
#include <cstdlib>
#include <utility>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::late_leak;

namespace {
void* g_blocks[kRoutes];
}

__attribute__((noinline)) void* leak_leaf() {
    void* block = std::malloc(kBlockSize);
    if (block == nullptr) fail("malloc in leak_leaf");
    return block;
}

__attribute__((noinline)) void* handle() { return leak_leaf(); }
__attribute__((noinline)) void* route() { return handle(); }

template <std::size_t Route>
__attribute__((noinline)) void late_leak_chain() {
    g_blocks[Route] = route();
}

template <std::size_t... Routes>
constexpr auto make_chains(std::index_sequence<Routes...>) {
    return std::array<void (*)(), sizeof...(Routes)>{&late_leak_chain<Routes>...};
}

int main() {
    for (auto chain : make_chains(std::make_index_sequence<kRoutes>{})) chain();
    announce_ready_and_wait_for_release();
    return 0;
}
