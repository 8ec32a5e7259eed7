#include "sampling_estimate.h"

#include <cmath>

namespace leakwrap {
namespace {

// A corrupt segment can ask for more than 64 bits; pin it rather than invoke undefined behaviour.
uint64_t rounded_count(double value) {
    constexpr double kTwoTo64 = 18446744073709551616.0;
    if (!(value >= 0)) return 0;
    if (value >= kTwoTo64) return UINT64_MAX;
    return static_cast<uint64_t>(std::round(value));
}

struct Scaled {
    uint64_t count;
    uint64_t bytes;
};

Scaled scale(uint64_t count, uint64_t bytes, uint64_t sample_interval) {
    if (count == 0) return {0, 0};
    const double probability =
        sampling_probability(static_cast<double>(bytes) / static_cast<double>(count), sample_interval);
    // A zero-byte block has no chance of being sampled by bytes, so any the writer counted were
    // counted for another reason; leave them as they are rather than divide by zero.
    if (probability <= 0) return {count, bytes};
    return {rounded_count(static_cast<double>(count) / probability),
            rounded_count(static_cast<double>(bytes) / probability)};
}

}  // namespace

double sampling_probability(double block_size, uint64_t sample_interval) {
    if (sample_interval == 0) return 1.0;
    // -expm1(-x) is 1 - exp(-x) without the cancellation that ruins it for blocks far smaller
    // than the interval, which is the common case.
    return -std::expm1(-block_size / static_cast<double>(sample_interval));
}

Counters in_proportion(const Counters& part, const Counters& sampled, const Counters& estimated) {
    const auto scale_field = [](uint64_t value, uint64_t sampled_whole, uint64_t estimated_whole) {
        if (sampled_whole == 0) return value;
        return rounded_count(static_cast<double>(value) * static_cast<double>(estimated_whole) /
                             static_cast<double>(sampled_whole));
    };
    return {scale_field(part.allocs, sampled.allocs, estimated.allocs),
            scale_field(part.frees, sampled.frees, estimated.frees),
            scale_field(part.alloc_bytes, sampled.alloc_bytes, estimated.alloc_bytes),
            scale_field(part.free_bytes, sampled.free_bytes, estimated.free_bytes)};
}

Counters estimated_counters(const Counters& sampled, uint64_t sample_interval) {
    if (sample_interval == 0) return sampled;
    const Scaled allocated = scale(sampled.allocs, sampled.alloc_bytes, sample_interval);
    const Scaled freed = scale(sampled.frees, sampled.free_bytes, sample_interval);
    return {allocated.count, freed.count, allocated.bytes, freed.bytes};
}

}  // namespace leakwrap
