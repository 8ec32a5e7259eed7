#include "report_rows.h"

#include "sampling_estimate.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace leakwrap {
namespace {

// What makes two records one row: views into the snapshot's stacks, compared by what they hold.
// Frames stay empty under --by ruby, and the overflow row gets a key of its own, so a stackless
// ordinary record can never join it.
struct RowKey {
    bool overflow = false;
    std::span<const uint64_t> frames;
    std::span<const RubyLocation> ruby;

    bool operator==(const RowKey& other) const {
        return overflow == other.overflow && std::ranges::equal(frames, other.frames) &&
               std::ranges::equal(ruby, other.ruby);
    }
};

// Hashed rather than ordered: a Ruby process has some 80,000 records with 16-frame keys, and
// ordering them cost a third of a report.
struct RowKeyHash {
    std::size_t operator()(const RowKey& key) const {
        uint64_t hash = key.overflow ? 0x9E3779B97F4A7C15ull : 0;
        for (uint64_t frame : key.frames) hash = (hash ^ frame) * 0xff51afd7ed558ccdull;
        for (const RubyLocation& frame : key.ruby)
            hash = (hash ^ (std::hash<std::string_view>{}(frame.file) * 31 + frame.line)) * 0xff51afd7ed558ccdull;
        return static_cast<std::size_t>(hash ^ (hash >> 32));
    }
};

// Under --by ruby, the innermost Ruby frame alone.
std::span<const RubyLocation> ruby_key(const Site& site, Grouping grouping) {
    const auto ruby = site.ruby();
    return grouping == Grouping::native ? ruby : ruby.first(std::min<std::size_t>(ruby.size(), 1));
}

RowKey row_key(const Site& site, Grouping grouping) {
    if (site.overflow) return {true, {}, {}};
    return {false, grouping == Grouping::native ? site.frames() : std::span<const uint64_t>(),
            ruby_key(site, grouping)};
}

void add_to_size_class(std::vector<SizeClassCounters>& size_classes, uint32_t size_class,
                       const Counters& counters) {
    auto at = std::lower_bound(
        size_classes.begin(), size_classes.end(), size_class,
        [](const SizeClassCounters& entry, uint32_t wanted) { return entry.size_class < wanted; });
    if (at == size_classes.end() || at->size_class != size_class)
        at = size_classes.insert(at, {size_class, {}});
    at->counters += counters;
}

ReportRow first_row_of(const Site& site, Grouping grouping, bool estimated) {
    ReportRow row;
    row.id = site.id;
    row.overflow = site.overflow;
    row.estimated = estimated;
    if (grouping == Grouping::native) {
        row.frames = site.frames();
        row.module_generation = site.module_generation();
    }
    row.ruby = ruby_key(site, grouping);
    row.reduced = site.reduced();
    return row;
}

}  // namespace

Counters ReportRow::in_size_class(uint32_t size_class) const {
    for (const auto& entry : size_classes)
        if (entry.size_class == size_class) return entry.counters;
    return {};
}

std::optional<Grouping> grouping_from_name(std::string_view name) {
    if (name == "native") return Grouping::native;
    if (name == "ruby") return Grouping::ruby;
    return std::nullopt;
}

std::string_view grouping_name(Grouping grouping) {
    return grouping == Grouping::ruby ? "ruby" : "native";
}

std::vector<ReportRow> report_rows(const Snapshot& snapshot, Grouping grouping) {
    std::vector<ReportRow> rows;
    std::unordered_map<RowKey, std::size_t, RowKeyHash> row_of_key;
    row_of_key.reserve(snapshot.sites.size());
    // Sites come in slot order, so a row's first record has its smallest id.
    for (const Site& site : snapshot.sites) {
        // The writer creates every overflow site up front; only those that counted belong in use.
        if (site.overflow && site.counters.allocs == 0) continue;
        // A record that lost an insertion race counted nothing, nor has a new one yet.
        if (site.counters.allocs == 0 && site.counters.frees == 0) continue;
        const auto [entry, is_new] = row_of_key.try_emplace(row_key(site, grouping), rows.size());
        if (is_new) rows.push_back(first_row_of(site, grouping, snapshot.sampled()));
        ReportRow& row = rows[entry->second];
        const Counters counters = estimated_counters(site.counters, snapshot.sample_interval);
        row.counters += counters;
        row.records.push_back(site.id);
        add_to_size_class(row.size_classes, site.size_class, counters);
    }
    return rows;
}

}  // namespace leakwrap
