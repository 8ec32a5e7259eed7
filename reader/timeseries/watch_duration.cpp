#include "watch_duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <utility>

namespace leakwrap {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
    constexpr std::array<std::pair<std::string_view, int64_t>, 4> kUnits = {{
        {"ms", 1},
        {"s", 1000},
        {"m", 60 * 1000},
        {"h", 60 * 60 * 1000},
    }};
    int64_t number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end == text.data() || number <= 0) return std::nullopt;
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    for (const auto& [name, milliseconds] : kUnits) {
        if (unit != name) continue;
        if (number > INT64_MAX / milliseconds) return std::nullopt;
        return std::chrono::milliseconds(number * milliseconds);
    }
    return std::nullopt;
}

}  // namespace leakwrap
