// Durations as `watch` takes them on the command line: "500ms", "5s", "2m", "1h".
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace leakwrap {

// A positive whole number directly followed by ms, s, m or h. Anything else (no unit, zero, a
// sign, a fraction, spaces, an overflow) is nullopt, so a typo never becomes a surprising period.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace leakwrap
