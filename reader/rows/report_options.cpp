#include "report_options.h"

#include <algorithm>
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
    if (name == "folded") return ReportFormat::folded;
    if (name == "prometheus") return ReportFormat::prometheus;
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

}  // namespace leakwrap
