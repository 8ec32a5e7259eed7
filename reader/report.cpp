#include "report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <tuple>

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
    return std::nullopt;
}

std::vector<const Site*> ranked_sites(const Snapshot& snapshot, const ReportOptions& options) {
    std::vector<const Site*> ranked;
    ranked.reserve(snapshot.sites.size());
    for (const auto& site : snapshot.sites) ranked.push_back(&site);

    const auto primary = [&](const Site& site) {
        switch (options.sort) {
            case SortKey::allocs:
                return site.allocs;
            case SortKey::bytes:
                return site.alloc_bytes;
            case SortKey::live:
                break;
        }
        return site.live_bytes;
    };
    const auto ranks_before = [&](const Site* a, const Site* b) {
        return std::make_tuple(primary(*a), a->live_blocks, b->id) >
               std::make_tuple(primary(*b), b->live_blocks, a->id);
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

std::string human_bytes(uint64_t bytes) {
    constexpr std::array kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < kUnits.size()) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0)
        std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
    return text;
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
    }
}

}  // namespace leakwrap
