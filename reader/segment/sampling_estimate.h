// Sampling mode (Header::sample_interval != 0): the writer attributes a block of n bytes to its
// site with probability 1 - exp(-n / sample_interval), so a site's counters count sampled blocks
// only, and so do the bins when Header::flags says kBinsSampled. This turns them back into
// estimates of the true numbers: the parser estimates the bins, the rows their sites.
#pragma once

#include "segment_snapshot.h"

#include <cstdint>

namespace leakwrap {

// The chance that a block of `block_size` bytes was sampled; 1 in exact mode (interval 0).
double sampling_probability(double block_size, uint64_t sample_interval);

// Allocations and frees are scaled separately, each by the probability of its own average block
// size (the frees of a site need not be of blocks as large as its allocations on average).
// Exact mode returns the counters unchanged.
Counters estimated_counters(const Counters& sampled, uint64_t sample_interval);

// `part` of what `sampled` counted, scaled field by field as `sampled` was to `estimated`: for a
// count of sampled blocks that only a whole was estimated for.
Counters in_proportion(const Counters& part, const Counters& sampled, const Counters& estimated);

}  // namespace leakwrap
