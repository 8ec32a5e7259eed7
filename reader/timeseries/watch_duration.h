// Quantities as the time-analysis commands take them on the command line: durations for `watch`
// ("500ms", "5s", "2m", "1h") and byte sizes for `suspects --max-growth` ("512KiB", "1MiB").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace leakwrap {

// A positive whole number directly followed by ms, s, m or h. Anything else (no unit, zero, a
// sign, a fraction, spaces, an overflow) is nullopt, so a typo never becomes a surprising period.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);
// The same in nanoseconds, as the birth grid counts time (--born-after, serve's born_after).
std::optional<uint64_t> parse_duration_ns(std::string_view text);

// A whole number (0 too) directly followed by B, KiB, MiB or GiB; anything else is nullopt.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace leakwrap
