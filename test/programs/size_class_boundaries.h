// What size_class_boundaries allocates: sizes at and just past the limits of size classes, from
// the smallest class to the first class past the 4 MiB quarter steps.
#pragma once

#include <array>
#include <cstddef>

namespace size_class_boundaries {

inline constexpr std::size_t kMiB = 1024 * 1024;
inline constexpr std::array<std::size_t, 12> kSizes = {8,   9,   16,  17,  128,      129,
                                                       160, 161, 320, 321, 4 * kMiB, 4 * kMiB + 1};
inline constexpr std::size_t kBlocksPerSize = 3;

}  // namespace size_class_boundaries
