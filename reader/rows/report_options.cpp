#include "report_options.h"

#include <algorithm>
#include <initializer_list>
#include <tuple>
#include <utility>

namespace leakwrap {

namespace {

template <class Enum>
using Names = std::initializer_list<std::pair<std::string_view, Enum>>;

template <class Enum>
std::optional<Enum> value_named(std::string_view name, Names<Enum> names) {
    for (const auto& [candidate, value] : names)
        if (candidate == name) return value;
    return std::nullopt;
}

}  // namespace

std::optional<SortKey> sort_key_from_name(std::string_view name) {
    return value_named<SortKey>(
        name, {{"live", SortKey::live}, {"allocs", SortKey::allocs}, {"bytes", SortKey::bytes}});
}

std::optional<ReportFormat> report_format_from_name(std::string_view name) {
    return value_named<ReportFormat>(name, {{"text", ReportFormat::text},
                                            {"json", ReportFormat::json},
                                            {"csv", ReportFormat::csv},
                                            {"folded", ReportFormat::folded},
                                            {"prometheus", ReportFormat::prometheus},
                                            {"openmetrics", ReportFormat::openmetrics},
                                            {"pprof", ReportFormat::pprof}});
}

std::optional<ValueKind> value_kind_from_name(std::string_view name) {
    return value_named<ValueKind>(name, {{"live", ValueKind::live}, {"alloc", ValueKind::alloc}});
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
