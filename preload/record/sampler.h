// Sampling mode (LEAKWRAP_SAMPLE=<bytes>): Poisson sampling by bytes, as tcmalloc and jemalloc
// do. Each thread counts down a random number of bytes drawn from an exponential distribution
// with the configured mean; the allocation that crosses zero is sampled (unwound and attributed
// to its site). A block of n bytes is thus sampled with probability 1 - exp(-n / mean), which
// the reader divides by to estimate the true counts. Unsampled blocks cost no unwinding.
#pragma once

#include <cstdint>

#include "thread_state.h"

namespace leakwrap {

extern uint64_t g_sample_interval;  // 0: exact mode, every allocation is attributed
// Sampling mode under glibc's malloc: a block that is not sampled is the real allocator's, as
// if leakwrap were not there (no header, counted nowhere, not even in the bins: kBinsSampled),
// so that it costs a countdown and a branch. free() tells a sampled block by its header's tag,
// which glibc's chunk-size word before a block it handed out can never hold (block_header.h).
// Under another allocator, the bytes before its blocks may hold anything: every block then
// takes a header, as in exact mode, and the bins stay exact.
extern bool g_unsampled_blocks_bare;

int64_t draw_bytes_until_sample();
// -ln(1 - uniform) for uniform in [0, 1): a unit exponential draw, within 1e-12 of libm's.
double exponential_quantile(double uniform);

inline bool should_sample(uint64_t size) {
    if (g_sample_interval == 0) return true;
    SamplerState& state = t_thread.sampler;
    if (__builtin_expect(state.random_state == 0, 0)) state.bytes_until_sample = draw_bytes_until_sample();
    state.bytes_until_sample -= static_cast<int64_t>(size);
    if (__builtin_expect(state.bytes_until_sample > 0, 1)) return false;
    state.bytes_until_sample = draw_bytes_until_sample();
    return true;
}

}  // namespace leakwrap
