// What a report is asked for (how many rows, ranked by what, in which format) and the ranking
// that every format and time analysis apply to the rows.
#pragma once

#include "focus_patterns.h"
#include "report_rows.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class SortKey { live, allocs, bytes };
enum class ReportFormat { text, json, csv, folded, prometheus, openmetrics, pprof };
// What a folded line counts: live bytes, or bytes ever allocated.
enum class ValueKind { live, alloc };

std::optional<SortKey> sort_key_from_name(std::string_view name);
std::optional<ReportFormat> report_format_from_name(std::string_view name);
std::optional<ValueKind> value_kind_from_name(std::string_view name);

struct ReportOptions {
    std::size_t top = 20;  // 0 = every row
    SortKey sort = SortKey::live;
    ReportFormat format = ReportFormat::text;
    Grouping by = Grouping::native;
    bool bins = false;                  // text and CSV: the size-class table instead of the rows
    ValueKind value = ValueKind::live;  // folded
    uint64_t min_live_bytes = 0;        // rows holding fewer live bytes are left out (watch's --min-bytes)
    FocusPatterns focus;                // --focus, --ignore: which rows are kept (row_selection.h)
    std::optional<uint32_t> site;       // --site: that row alone, shown in full
    bool hide_runtime = false;          // --hide-runtime: stacks without the runtimes' frames
    bool full_names = false;            // --full-names: text shows C++ names unshortened
};

// What a row is ranked by: its live bytes and blocks and the sort key's counter.
struct RankedValues {
    uint64_t primary = 0;  // the sort key's: live bytes, allocations or bytes allocated
    uint64_t live_bytes = 0;
    uint64_t live_blocks = 0;
};

// The order of a report's rows: descending by the sort key; ties by live blocks, then ascending
// id, so output is stable. Rows under --min-bytes are not shown, and at most --top are.
class RowRanking {
public:
    explicit RowRanking(const ReportOptions& options) : options_(options) {}
    RankedValues values_of(const Counters& counters) const;
    bool shown(const RankedValues& values) const { return values.live_bytes >= options_.min_live_bytes; }
    bool shown(const Counters& counters) const { return shown(values_of(counters)); }
    // Whether the row (a, a_id) ranks before the row (b, b_id).
    bool before(const RankedValues& a, uint32_t a_id, const RankedValues& b, uint32_t b_id) const;
    bool before(const Counters& a, uint32_t a_id, const Counters& b, uint32_t b_id) const {
        return before(values_of(a), a_id, values_of(b), b_id);
    }
    // How many of `candidates` shown rows make the report.
    std::size_t shown_of(std::size_t candidates) const;

private:
    const ReportOptions& options_;
};

// The rows a report shows, in the order RowRanking gives.
std::vector<const ReportRow*> ranked_rows(const std::vector<ReportRow>& rows, const ReportOptions& options);

}  // namespace leakwrap
