// Report rows: what one entry of a report stands for. The writer keeps one site record per
// (native stack, Ruby location, size class); a reader wants one row per call site, with its size
// classes as a breakdown (--by native), or one row per Ruby source line (--by ruby).
#pragma once

#include "segment_snapshot.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace leakwrap {

enum class Grouping {
    native,  // one row per (native stack, Ruby backtrace)
    ruby,    // one row per innermost Ruby file:line, whatever the stacks; one for "no Ruby frame"
};

std::optional<Grouping> grouping_from_name(std::string_view name);
std::string_view grouping_name(Grouping grouping);  // "native", "ruby"

struct SizeClassCounters {
    uint32_t size_class = 0;
    Counters counters;
};

struct ReportRow {
    uint32_t id = 0;  // the smallest record id: short, and stable for as long as the process runs
    // The overflow sites of all size classes, merged: allocations from stacks that found the site
    // table full.
    bool overflow = false;
    bool estimated = false;  // sampling mode: the counters are estimates, not counts
    Counters counters;       // summed over the records
    // The stack of the row's first record, a view into the snapshot's stacks, which must outlive
    // the row; empty for the overflow row and under --by ruby.
    std::span<const uint64_t> frames;
    uint32_t module_generation = 0;  // of the record the frames come from
    // The Ruby backtrace of the row's first record, innermost first; under --by ruby only the
    // innermost frame, which is the row's key.
    std::span<const RubyLocation> ruby;
    bool reduced = false;  // the writer kept only the innermost frames (tables nearly full)
    std::vector<uint32_t> records;                // ids of the merged records, ascending
    std::vector<SizeClassCounters> size_classes;  // ascending by class, summed likewise

    const RubyLocation* innermost_ruby() const { return ruby.empty() ? nullptr : &ruby.front(); }

    // The row's share of one size class; zero if it has no blocks there.
    Counters in_size_class(uint32_t size_class) const;
};

// Every row of the snapshot, ordered by id. In sampling mode each record is scaled to its
// estimate before it is merged, since the scale depends on the record's block size. The overflow
// row is left out while no allocation reached it.
std::vector<ReportRow> report_rows(const Snapshot& snapshot, Grouping grouping);

}  // namespace leakwrap
