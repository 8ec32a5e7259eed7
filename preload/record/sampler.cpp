#include "sampler.h"

#include <cstring>

#include "lifecycle.h"

namespace leakwrap {

constinit uint64_t g_sample_interval = 0;
constinit bool g_unsampled_blocks_bare = false;

// -ln(1 - u), written out so that the library needs no libm: one library less for every
// process to map and relocate at its start. With 1 - u = m * 2^e, m in [sqrt(1/2), sqrt(2)),
// ln(m) = 2 atanh(s) for s = (m - 1) / (m + 1), |s| <= 0.172, whose odd series is below 1e-13
// after the 8 terms summed here.
double exponential_quantile(double uniform) {
    const double v = 1.0 - uniform;  // (0, 1]: uniform < 1 always
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52);  // m in [1, 2)
    double m;
    std::memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        ++exponent;
    }
    const double s = (m - 1.0) / (m + 1.0);
    const double s2 = s * s;
    double series = 0.0;
    for (int k = 15; k >= 1; k -= 2) series = series * s2 + 1.0 / k;
    const double log_v = exponent * 0.6931471805599453 + 2.0 * s * series;
    return -log_v;
}

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
    double bytes = exponential_quantile(uniform) * static_cast<double>(g_sample_interval);
    return static_cast<int64_t>(bytes) + 1;
}

}  // namespace leakwrap
