#include "watch_duration.h"

#include <array>
#include <charconv>
#include <span>
#include <utility>

namespace leakwrap {
namespace {

using Unit = std::pair<std::string_view, int64_t>;

// A whole number that is not negative, directly followed by one of the units, in the smallest.
std::optional<int64_t> parse_quantity(std::string_view text, std::span<const Unit> units) {
    int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data() || number < 0) return std::nullopt;
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    for (const auto& [name, scale] : units) {
        if (unit != name) continue;
        if (number > INT64_MAX / scale) return std::nullopt;
        return number * scale;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    constexpr std::array<Unit, 4> kUnits = {{
        {"ms", 1},
        {"s", 1000},
        {"m", 60 * 1000},
        {"h", 60 * 60 * 1000},
    }};
    const std::optional<int64_t> milliseconds = parse_quantity(text, kUnits);
    if (!milliseconds || *milliseconds == 0) return std::nullopt;
    return std::chrono::milliseconds(*milliseconds);
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
    constexpr std::array<Unit, 4> kUnits = {{
        {"B", 1},
        {"KiB", int64_t{1} << 10},
        {"MiB", int64_t{1} << 20},
        {"GiB", int64_t{1} << 30},
    }};
    const std::optional<int64_t> bytes = parse_quantity(text, kUnits);
    if (!bytes) return std::nullopt;
    return static_cast<uint64_t>(*bytes);
}

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
    const auto duration = parse_duration(text);
    if (!duration) return std::nullopt;
    return static_cast<uint64_t>(std::chrono::nanoseconds(*duration).count());
}

}  // namespace leakwrap
