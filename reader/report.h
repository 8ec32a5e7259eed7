// What the three report formats share: options, which sites to show in what order, and how a
// frame reads in one line.
#pragma once

#include "process_identity.h"
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
enum class ReportFormat { text, json, csv };

std::optional<SortKey> sort_key_from_name(std::string_view name);
std::optional<ReportFormat> report_format_from_name(std::string_view name);

struct ReportOptions {
    std::size_t top = 20;  // 0 = every site
    SortKey sort = SortKey::live;
    ReportFormat format = ReportFormat::text;
};

// Descending by the sort key; ties by live blocks, then ascending id, so output is stable.
std::vector<const Site*> ranked_sites(const Snapshot& snapshot, const ReportOptions& options);

// "0x7f3a12c0"
std::string hex_address(uint64_t address);

// "48.8 MiB"
std::string human_bytes(uint64_t bytes);

// "file:line", "file", or "" when DWARF had nothing.
std::string source_location(const ResolvedFrame& frame);

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
