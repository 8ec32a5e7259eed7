// Leaks one block from each of kSites distinct functions, i.e. from kSites distinct call stacks,
// enough to fill a small site table and push the rest into the overflow site.
#include <array>
#include <cstdlib>
#include <utility>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::many_sites;

namespace {
void* g_blocks[kSites];
}

template <std::size_t Site>
__attribute__((noinline)) void many_sites_leak() {
    g_blocks[Site] = std::malloc(kBlockSize);
    if (g_blocks[Site] == nullptr) fail("malloc in many_sites_leak");
}

template <std::size_t... Sites>
constexpr auto make_leakers(std::index_sequence<Sites...>) {
    return std::array<void (*)(), sizeof...(Sites)>{&many_sites_leak<Sites>...};
}

int main() {
    for (auto leak : make_leakers(std::make_index_sequence<kSites>{})) leak();
    announce_ready_and_wait_for_release();
    return 0;
}
