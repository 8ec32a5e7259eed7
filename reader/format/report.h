// What the three report formats share: options, which rows to show in what order, and how a
// frame, a size class or a row reads in one line.
#pragma once

#include "process_identity.h"
#include "report_rows.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class SortKey { live, allocs, bytes };
enum class ReportFormat { text, json, csv, folded, openmetrics, pprof };
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
    bool bins = false;  // text and CSV: the size-class table instead of the rows
    ValueKind value = ValueKind::live;  // folded
    uint64_t min_live_bytes = 0;  // rows holding fewer live bytes are left out (watch's --min-bytes)
};

// Descending by the sort key; ties by live blocks, then ascending id, so output is stable.
std::vector<const ReportRow*> ranked_rows(const std::vector<ReportRow>& rows,
                                          const ReportOptions& options);

// "0x7f3a12c0"
std::string hex_address(uint64_t address);

// "48.8 MiB"
std::string human_bytes(uint64_t bytes);

// "file:line", "file", or "" when DWARF had nothing.
std::string source_location(const ResolvedFrame& frame);

// "≤320 B", "≤1.25 KiB", "> 1 TiB": size-class limits are exact in binary units.
std::string size_class_label(uint32_t size_class);

// The inclusive upper bound of a class in bytes; nullopt for the last, unbounded one.
std::optional<uint64_t> size_class_limit_bytes(uint32_t size_class);

// "app.rb:12"
std::string ruby_location_text(const RubyLocation& location);

// Where a row allocates, in a few words: the innermost function (and the Ruby location, if
// any), the Ruby location alone under --by ruby, or "[overflow]".
std::string row_summary(const ReportRow& row, Grouping grouping, Symbolizer& symbolizer);

struct ReportInput {
    const Snapshot& snapshot;
    OwnerState owner;
    Symbolizer& symbolizer;
    ReportOptions options;
};

void write_text_report(std::ostream& out, const ReportInput& input);
void write_json_report(std::ostream& out, const ReportInput& input);
void write_csv_report(std::ostream& out, const ReportInput& input);

// Dispatches on input.options.format.
void write_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
