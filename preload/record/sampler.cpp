#include "sampler.h"

#include <cmath>

#include "lifecycle.h"

namespace leakwrap {

constinit uint64_t g_sample_interval = 0;
constinit bool g_unsampled_blocks_bare = false;

int64_t draw_bytes_until_sample() {
    SamplerState& state = t_thread.sampler;
    if (state.random_state == 0) state.random_state = (reinterpret_cast<uintptr_t>(&state) ^ g_tag_secret) | 1;
    // xorshift64*: cheap, and plenty for spacing samples.
    uint64_t x = state.random_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state.random_state = x;
    double uniform = static_cast<double>((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;  // [0, 1)
    double bytes = -std::log1p(-uniform) * static_cast<double>(g_sample_interval);
    return static_cast<int64_t>(bytes) + 1;
}

}  // namespace leakwrap
