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
    return value_named<SortKey>(name,
                                {{"live", SortKey::live}, {"allocs", SortKey::allocs}, {"bytes", SortKey::bytes}});
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

RankedValues RowRanking::values_of(const Counters& counters) const {
    RankedValues values{0, counters.live_bytes(), counters.live_blocks()};
    switch (options_.sort) {
        case SortKey::allocs: values.primary = counters.allocs; break;
        case SortKey::bytes: values.primary = counters.alloc_bytes; break;
        case SortKey::live: values.primary = values.live_bytes; break;
    }
    return values;
}

bool RowRanking::before(const RankedValues& a, uint32_t a_id, const RankedValues& b, uint32_t b_id) const {
    return std::make_tuple(a.primary, a.live_blocks, b_id) > std::make_tuple(b.primary, b.live_blocks, a_id);
}

std::size_t RowRanking::shown_of(std::size_t candidates) const {
    return options_.top == 0 ? candidates : std::min(options_.top, candidates);
}

std::vector<const ReportRow*> ranked_rows(const std::vector<ReportRow>& rows, const ReportOptions& options) {
    const RowRanking ranking(options);
    std::vector<const ReportRow*> ranked;
    ranked.reserve(rows.size());
    for (const auto& row : rows)
        if (ranking.shown(row.counters)) ranked.push_back(&row);
    const std::size_t shown = ranking.shown_of(ranked.size());
    std::partial_sort(
        ranked.begin(), ranked.begin() + shown, ranked.end(),
        [&](const ReportRow* a, const ReportRow* b) { return ranking.before(a->counters, a->id, b->counters, b->id); });
    ranked.resize(shown);
    return ranked;
}

}  // namespace leakwrap
