#include "report_rows.h"

#include "flat_slots.h"
#include "sampling_estimate.h"

#include <algorithm>
#include <functional>
#include <string_view>

namespace leakwrap {
namespace {

// What makes two records one row: views into the snapshot's stacks, compared by what they hold.
// Frames stay empty under --by ruby, and the overflow row gets a key of its own, so a stackless
// ordinary record can never join it.
struct RowKey {
    bool overflow = false;
    NativeFrames frames;
    RubyBacktrace ruby;

    bool operator==(const RowKey& other) const {
        return overflow == other.overflow && frames == other.frames && ruby == other.ruby;
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
RubyBacktrace ruby_key(const Site& site, Grouping grouping) {
    const RubyBacktrace ruby = site.ruby();
    return grouping == Grouping::native ? ruby : ruby.first(1);
}

RowKey row_key(const Site& site, Grouping grouping) {
    if (site.overflow()) return {true, {}, {}};
    return {false, grouping == Grouping::native ? site.frames() : NativeFrames(), ruby_key(site, grouping)};
}

// Which row a record joins, by its key: rows numbered as first seen, found by key in FlatSlots,
// each row's key being that of its first record: a std::unordered_map of keys would be a small
// block a row, left resident through the report.
class RowNumbers {
public:
    RowNumbers(const std::vector<Site>& sites, Grouping grouping) : sites_(sites), grouping_(grouping) {}

    // The row of the record at `position` in the sites.
    uint32_t row_of(std::size_t position) {
        const RowKey key = row_key(sites_[position], grouping_);
        uint32_t* slot = slots_.find(*this, key, RowKeyHash{}(key));
        if (*slot != 0) return *slot - 1;
        first_site_.push_back(static_cast<uint32_t>(position));
        slots_.occupy(slot, first_site_.size() - 1);
        return *slot - 1;
    }

    bool key_equals(std::size_t row, const RowKey& key) const { return key_of(row) == key; }
    uint64_t hash_of(std::size_t row) const { return RowKeyHash{}(key_of(row)); }

private:
    RowKey key_of(std::size_t row) const { return row_key(sites_[first_site_[row]], grouping_); }

    const std::vector<Site>& sites_;
    Grouping grouping_;
    std::vector<uint32_t> first_site_;  // by row number
    FlatSlots<RowNumbers> slots_;
};

ReportRow first_row_of(const Site& site, Grouping grouping, bool estimated) {
    ReportRow row;
    row.id = site.id;
    row.overflow = site.overflow();
    row.estimated = estimated;
    row.by = grouping;
    row.reduced = site.reduced();
    return row;
}

}  // namespace

RubyBacktrace ReportRow::ruby() const { return ruby_key(*record_sites.front(), by); }

std::vector<uint32_t> ReportRow::records() const {
    std::vector<uint32_t> ids;
    ids.reserve(record_sites.size());
    for (const Site* site : record_sites) ids.push_back(site->id);
    return ids;
}

std::vector<SizeClassCounters> ReportRow::size_classes() const {
    std::vector<SizeClassCounters> size_classes;
    for (const Site* site : record_sites) {
        auto at =
            std::lower_bound(size_classes.begin(), size_classes.end(), site->size_class(),
                             [](const SizeClassCounters& entry, uint32_t wanted) { return entry.size_class < wanted; });
        if (at == size_classes.end() || at->size_class != site->size_class())
            at = size_classes.insert(at, {site->size_class(), {}});
        at->counters += estimated_counters(site->counters(), record_table->sample_interval);
    }
    return size_classes;
}

Counters ReportRow::in_size_class(uint32_t size_class) const {
    Counters sum;
    for (const Site* site : record_sites)
        if (site->size_class() == size_class)
            sum += estimated_counters(site->counters(), record_table->sample_interval);
    return sum;
}

std::optional<Grouping> grouping_from_name(std::string_view name) {
    if (name == "native") return Grouping::native;
    if (name == "ruby") return Grouping::ruby;
    return std::nullopt;
}

std::string_view grouping_name(Grouping grouping) { return grouping == Grouping::ruby ? "ruby" : "native"; }

RowAssignment assign_rows(const Snapshot& snapshot, Grouping grouping, const std::vector<bool>* kept) {
    RowAssignment assignment;
    assignment.row_of_site.assign(snapshot.sites.size(), RowAssignment::kNoRow);
    RowNumbers row_numbers(snapshot.sites, grouping);
    for (std::size_t position = 0; position < snapshot.sites.size(); ++position) {
        const Site& site = snapshot.sites[position];
        const Counters counters = site.counters();
        // The writer creates every overflow site up front; only those that counted belong in use.
        if (site.overflow() && counters.allocs == 0) continue;
        // A record that lost an insertion race counted nothing, nor has a new one yet.
        if (counters.allocs == 0 && counters.frees == 0) continue;
        if (kept != nullptr && !(*kept)[position]) continue;
        const uint32_t row = row_numbers.row_of(position);
        if (row == assignment.records_of_row.size()) assignment.records_of_row.push_back(0);
        assignment.row_of_site[position] = row;
        ++assignment.records_of_row[row];
    }
    return assignment;
}

// Allocated once, at their size: grown as they came, the rows would take up to twice theirs.
std::vector<ReportRow> make_rows(const Snapshot& snapshot, Grouping grouping, const RowAssignment& assignment,
                                 const std::vector<bool>* wanted) {
    constexpr uint32_t kNoRow = RowAssignment::kNoRow;
    // The rows made, by number: all, or those `wanted` marks. A row's place in `rows` is its rank
    // among them, rows being made in the order of their numbers, which is the order of their first
    // records; each row's records come after those of the rows made before it. Only the rows made
    // have tables here, not sized by all rows: reports of every row make their rows a batch at a
    // time.
    std::vector<uint32_t> made;  // empty: every row, its place its number
    if (wanted != nullptr)
        for (uint32_t row = 0; row < assignment.row_count(); ++row)
            if ((*wanted)[row]) made.push_back(row);
    const std::size_t places = wanted != nullptr ? made.size() : assignment.row_count();
    const auto row_at = [&](std::size_t place) {
        return wanted != nullptr ? made[place] : static_cast<uint32_t>(place);
    };
    std::vector<uint32_t> next_record(places);
    uint32_t records = 0;
    for (std::size_t place = 0; place < places; ++place) {
        next_record[place] = records;
        records += assignment.records_of_row[row_at(place)];
    }
    const auto place_of = [&](uint32_t row) -> std::size_t {
        if (wanted == nullptr) return row;
        return static_cast<std::size_t>(std::lower_bound(made.begin(), made.end(), row) - made.begin());
    };
    auto table = std::make_shared<RowRecords>();
    table->sample_interval = snapshot.sample_interval;
    table->sites.resize(records);
    std::vector<ReportRow> rows;
    rows.reserve(places);
    for (std::size_t position = 0; position < snapshot.sites.size(); ++position) {
        const uint32_t row_number = assignment.row_of_site[position];
        if (row_number == kNoRow || (wanted != nullptr && !(*wanted)[row_number])) continue;
        const Site& site = snapshot.sites[position];
        const std::size_t place = place_of(row_number);
        if (place == rows.size()) {
            ReportRow& row = rows.emplace_back(first_row_of(site, grouping, snapshot.sampled()));
            row.record_sites = std::span<const Site* const>(table->sites)
                                   .subspan(next_record[place], assignment.records_of_row[row_number]);
            row.record_table = table;
        }
        ReportRow& row = rows[place];
        row.counters += estimated_counters(site.counters(), snapshot.sample_interval);
        // A reduced stack can have the frames of a whole one (a backtrace of one Ruby frame): the
        // row holds allocations whose outer frames are unknown.
        row.reduced = row.reduced || site.reduced();
        table->sites[next_record[place]++] = &site;
    }
    return rows;
}

std::vector<ReportRow> report_rows(const Snapshot& snapshot, Grouping grouping, const std::vector<bool>* kept) {
    return make_rows(snapshot, grouping, assign_rows(snapshot, grouping, kept), nullptr);
}

}  // namespace leakwrap
