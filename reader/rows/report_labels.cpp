#include "report_labels.h"

#include "short_names.h"

#include <leakwrap/segment_layout.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <utility>

namespace leakwrap {

std::string hex_address(uint64_t address) {
    char text[24];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
    return text;
}

namespace {

constexpr std::array kBinaryUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

// The value in the largest unit it reaches, e.g. {1.5, "KiB"} for 1536.
std::pair<double, const char*> in_binary_units(uint64_t bytes) {
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < kBinaryUnits.size()) {
        value /= 1024.0;
        ++unit;
    }
    return {value, kBinaryUnits[unit]};
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
    const auto [value, unit] = in_binary_units(bytes);
    char text[32];
    if (bytes < 1024)
        std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(text, sizeof(text), "%.1f %s", value, unit);
    return text;
}

std::optional<uint64_t> size_class_limit_bytes(uint32_t size_class) {
    if (size_class + 1 >= layout::kSizeClassCount) return std::nullopt;
    return layout::size_class_limit(size_class);
}

std::string size_class_label(uint32_t size_class) {
    // Limits have at most two binary digits after the point in their unit (1.25 KiB, 1.5 MiB),
    // so two decimals with trailing zeros dropped print them exactly.
    const auto exact = [](uint64_t bytes) {
        const auto [value, unit] = in_binary_units(bytes);
        char number[32];
        std::snprintf(number, sizeof(number), "%.2f", value);
        std::string text = number;
        text.erase(text.find_last_not_of('0') + 1);
        if (text.back() == '.') text.pop_back();
        return text + " " + unit;
    };
    if (const auto limit = size_class_limit_bytes(size_class)) return "≤" + exact(*limit);
    return "> " + exact(layout::size_class_limit(layout::kSizeClassCount - 2));
}

bool is_runtime_module(std::string_view module_path) {
    // libruby-3.1.so.3.1 and libruby.so alike.
    constexpr std::array<std::string_view, 4> kRuntimes = {"libc.so", "libstdc++.so", "libgcc_s.so", "libruby"};
    const std::string name = std::filesystem::path(module_path).filename().string();
    return std::any_of(kRuntimes.begin(), kRuntimes.end(),
                       [&](std::string_view runtime) { return name.starts_with(runtime); });
}

std::string ruby_location_text(const RubyLocation& location) {
    return location.file.str() + ":" + std::to_string(location.line);
}

std::string row_summary(const ReportRow& row, Grouping grouping, Symbolizer& symbolizer, bool short_names) {
    if (row.overflow) return "[overflow]";
    if (grouping == Grouping::ruby)
        return row.innermost_ruby() ? "ruby: " + ruby_location_text(*row.innermost_ruby()) : "(no Ruby frame)";
    std::string summary =
        row.frames().empty()
            ? "(no stack)"
            : symbolizer.resolve(row.frames()[0], row.module_generation()).front().function_or_unknown();
    if (short_names) summary = short_function_name(summary);
    if (row.innermost_ruby()) summary += "  ruby: " + ruby_location_text(*row.innermost_ruby());
    return summary;
}

std::string source_location(const ResolvedFrame& frame) {
    if (!frame.file) return "";
    return frame.line ? frame.file->str() + ":" + std::to_string(*frame.line) : frame.file->str();
}

}  // namespace leakwrap
