#include "report.h"

#include "report_folded.h"
#include "report_openmetrics.h"
#include "report_pprof.h"

#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <tuple>
#include <utility>

namespace leakwrap {

std::optional<SortKey> sort_key_from_name(std::string_view name) {
    if (name == "live") return SortKey::live;
    if (name == "allocs") return SortKey::allocs;
    if (name == "bytes") return SortKey::bytes;
    return std::nullopt;
}

std::optional<ReportFormat> report_format_from_name(std::string_view name) {
    if (name == "text") return ReportFormat::text;
    if (name == "json") return ReportFormat::json;
    if (name == "csv") return ReportFormat::csv;
    if (name == "folded") return ReportFormat::folded;
    if (name == "openmetrics") return ReportFormat::openmetrics;
    if (name == "pprof") return ReportFormat::pprof;
    return std::nullopt;
}

std::optional<ValueKind> value_kind_from_name(std::string_view name) {
    if (name == "live") return ValueKind::live;
    if (name == "alloc") return ValueKind::alloc;
    return std::nullopt;
}

std::vector<const ReportRow*> ranked_rows(const std::vector<ReportRow>& rows,
                                          const ReportOptions& options) {
    std::vector<const ReportRow*> ranked;
    ranked.reserve(rows.size());
    for (const auto& row : rows)
        if (row.counters.live_bytes() >= options.min_live_bytes) ranked.push_back(&row);

    const auto primary = [&](const ReportRow& row) {
        switch (options.sort) {
            case SortKey::allocs:
                return row.counters.allocs;
            case SortKey::bytes:
                return row.counters.alloc_bytes;
            case SortKey::live:
                break;
        }
        return row.counters.live_bytes();
    };
    const auto ranks_before = [&](const ReportRow* a, const ReportRow* b) {
        return std::make_tuple(primary(*a), a->counters.live_blocks(), b->id) >
               std::make_tuple(primary(*b), b->counters.live_blocks(), a->id);
    };
    const std::size_t shown =
        options.top == 0 ? ranked.size() : std::min(options.top, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + shown, ranked.end(), ranks_before);
    ranked.resize(shown);
    return ranked;
}

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

std::string ruby_location_text(const RubyLocation& location) {
    return location.file + ":" + std::to_string(location.line);
}

std::string row_summary(const ReportRow& row, Grouping grouping, Symbolizer& symbolizer) {
    if (row.overflow) return "[overflow]";
    if (grouping == Grouping::ruby)
        return row.innermost_ruby() ? "ruby: " + ruby_location_text(*row.innermost_ruby())
                                    : "(no Ruby frame)";
    std::string summary =
        row.frames.empty()
            ? "(no stack)"
            : symbolizer.resolve(row.frames[0], row.module_generation).function.value_or("??");
    if (row.innermost_ruby()) summary += "  ruby: " + ruby_location_text(*row.innermost_ruby());
    return summary;
}

std::string source_location(const ResolvedFrame& frame) {
    if (!frame.file) return "";
    return frame.line ? *frame.file + ":" + std::to_string(*frame.line) : *frame.file;
}

void write_report(std::ostream& out, const ReportInput& input) {
    switch (input.options.format) {
        case ReportFormat::text:
            return write_text_report(out, input);
        case ReportFormat::json:
            return write_json_report(out, input);
        case ReportFormat::csv:
            return write_csv_report(out, input);
        case ReportFormat::folded:
            return write_folded_report(out, input);
        case ReportFormat::openmetrics:
            return write_openmetrics_report(out, input);
        case ReportFormat::pprof:
            return write_pprof_report(out, input);
    }
}

}  // namespace leakwrap
