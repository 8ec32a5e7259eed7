// The sampler's exponential draw, which the preload computes without libm: it must agree with
// libm's -log1p(-u) over the whole range the countdown draws from, including both ends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "sampler.h"

namespace leakwrap {
namespace {

void expect_close_to_libm(double uniform) {
    const double expected = -std::log1p(-uniform);
    const double got = exponential_quantile(uniform);
    EXPECT_NEAR(got, expected, 1e-12 * std::max(1.0, expected)) << "u = " << uniform;
}

TEST(Sampler, TheExponentialDrawAgreesWithLibmAcrossItsRange) {
    EXPECT_EQ(exponential_quantile(0.0), 0.0);
    // The largest uniform draw (53 bits): the longest countdown, 36.7 means.
    expect_close_to_libm(1.0 - 0x1.0p-53);
    for (uint64_t i = 0; i < 1000000; ++i) expect_close_to_libm(static_cast<double>(i) / 1000000.0);
    // Near 1, where 1 - u crosses many binades.
    for (int e = 1; e <= 52; ++e) expect_close_to_libm(1.0 - std::ldexp(1.0, -e) * 1.2345);
}

TEST(Sampler, TheExponentialDrawHasTheMeanOfTheUnitExponential) {
    // The midpoint rule over [0, 1) integrates the quantile to the distribution's mean, 1.
    constexpr int kSteps = 1 << 22;
    double sum = 0.0;
    for (int i = 0; i < kSteps; ++i) sum += exponential_quantile((i + 0.5) / kSteps);
    EXPECT_NEAR(sum / kSteps, 1.0, 1e-5);
}

}  // namespace
}  // namespace leakwrap
