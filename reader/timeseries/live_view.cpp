#include "live_view.h"

#include "best_of.h"
#include "change_units.h"
#include "memory_parts.h"
#include "printable_text.h"
#include "report_json.h"
#include "report_labels.h"
#include "sampling_estimate.h"
#include "short_names.h"
#include "site_label.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <tuple>

namespace leakwrap {
namespace {

// Labels kept at most: rows come and go from the screen over a long session.
constexpr std::size_t kMaxKeptLabels = 10000;

// The first `width` characters (code points) of a line: the screen must not wrap.
std::string fitted(const std::string& line, std::size_t width) {
    std::size_t characters = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        if ((static_cast<unsigned char>(line[i]) & 0xc0) == 0x80) continue;
        if (characters++ == width) return line.substr(0, i);
    }
    return line;
}

std::string table_row(const std::string& id, const std::string& live, const std::string& blocks,
                      const std::string& growth, const std::string& site) {
    char cells[96];
    std::snprintf(cells, sizeof(cells), "%10s %12s %10s %12s  ", id.c_str(), live.c_str(), blocks.c_str(),
                  growth.c_str());
    return cells + site;
}

}  // namespace

std::optional<LiveOrder> live_order_from_name(std::string_view name) {
    if (name == "live") return LiveOrder::live;
    if (name == "growth") return LiveOrder::growth;
    return std::nullopt;
}

LiveView::LiveView(LiveViewOptions options) : options_(std::move(options)), symbolizers_(options_.symbolizer) {}

LiveView::RowKey LiveView::key_of(const ReportRow& row, Grouping by) const {
    if (by == Grouping::ruby) {
        // A file's number stands for its text for as long as this process runs (SharedText).
        const RubyLocation* ruby = row.innermost_ruby();
        const RubyLocation location = ruby ? *ruby : RubyLocation{};
        return {uint64_t{location.file.number()} << 32 | location.line, row.overflow ? 1u : 0u};
    }
    // The return addresses are those of one process (and of the workers it forks, at the same
    // addresses); a Ruby frame's file by its hash, which is enough for a digest.
    const auto append = [this](const auto& value) {
        stack_bytes_.append(reinterpret_cast<const char*>(&value), sizeof(value));
    };
    stack_bytes_.clear();
    append(row.reduced);
    for (const uint64_t address : row.frames()) append(address);
    for (const RubyLocation& frame : row.ruby()) {
        append(std::hash<std::string_view>{}(frame.file));
        append(frame.line);
    }
    append(row.overflow);
    return stack_digest(stack_bytes_);
}

namespace {

bool key_before(const std::pair<StackDigest, uint64_t>& entry, const StackDigest& key) {
    return std::tie(entry.first.first, entry.first.second) < std::tie(key.first, key.second);
}

}  // namespace

LiveView::RowKey LiveView::key_of(uint32_t row) const {
    return key_of(FirstRecordRow(snapshot_.sites[current_.rows[row].first_site], options_.by).row(), options_.by);
}

void LiveView::remember_first_live(const Tallies& tallies, Grouping by) {
    auto& first_live = memory_[static_cast<std::size_t>(by)].first_live;
    first_live.clear();
    // A row that held nothing then grew by all it holds, as one not seen then: only the others
    // are kept (a third of a Rails process's rows hold nothing).
    const auto held = [](const RowTally& tally) { return tally.live_bytes.value() > 0; };
    first_live.reserve(static_cast<std::size_t>(std::count_if(tallies.rows.begin(), tallies.rows.end(), held)));
    for (const RowTally& tally : tallies.rows)
        if (held(tally))
            first_live.emplace_back(key_of(FirstRecordRow(snapshot_.sites[tally.first_site], by).row(), by),
                                    tally.live_bytes.value());
    std::stable_sort(first_live.begin(), first_live.end(),
                     [](const auto& a, const auto& b) { return key_before(a, b.first); });
}

void LiveView::update(Snapshot snapshot, double seconds_since_start) {
    snapshot_ = std::move(snapshot);
    sample_released_ = false;
    sites_in_use_ = snapshot_.sites_in_use();
    Symbolizer& symbolizer = symbolizers_.of(snapshot_);
    if (&symbolizer != symbolizer_ || memory().labels.size() > kMaxKeptLabels) {
        // Modules were loaded: what was resolved with the old list may now read differently.
        symbolizer_ = &symbolizer;
        for (RowMemory& grouping : memory_) {
            grouping.labels.clear();
            grouping.kept.clear();
        }
        matcher_ = std::make_unique<RowMatcher>(options_.focus, symbolizer);
    }
    current_ = tally(options_.by);
    seconds_ = seconds_since_start;
    if (samples_++ == 0) {
        first_live_bytes_ = snapshot_.totals.live_bytes();
        remember_first_live(current_, options_.by);
        // The other grouping's rows too, now: the first sample is not kept, and their growth is
        // since the view started whenever the key switches to them.
        const Grouping other = options_.by == Grouping::native ? Grouping::ruby : Grouping::native;
        remember_first_live(tally(other), other);
    }
}

// A Ruby line is focused by the records it keeps (records_of_kept_native_rows, as a report's
// focused_rows), so it is counted of those alone; a native row is kept or not whole, which kept() remembers by key from
// sample to sample.
LiveView::Tallies LiveView::tally(Grouping by) {
    Tallies tallies;
    tallies.assignment = assign_rows(snapshot_, by);
    tallies.all_rows = tallies.assignment.row_count();
    if (by == Grouping::ruby && !options_.focus.empty()) {
        const std::vector<bool> kept = records_of_kept_native_rows(snapshot_, *matcher_);
        tallies.assignment = assign_rows(snapshot_, by, &kept);
    }
    constexpr uint32_t kNoSite = UINT32_MAX;
    tallies.rows.assign(tallies.assignment.row_count(), RowTally{{}, kNoSite, 0});
    for (uint32_t position = 0; position < snapshot_.sites.size(); ++position) {
        const uint32_t row = tallies.assignment.row_of_site[position];
        if (row == RowAssignment::kNoRow) continue;
        const Site& site = snapshot_.sites[position];
        RowTally& tally = tallies.rows[row];
        // Rows are numbered by their first records, which come first in the sites.
        if (tally.first_site == kNoSite) tally = RowTally{{}, position, site.id};
        const Counters counters = estimated_counters(site.counters(), snapshot_.sample_interval);
        tally.live_bytes.add(counters.alloc_bytes, counters.free_bytes);
    }
    return tallies;
}

void LiveView::set_grouping(Grouping by) {
    if (by == options_.by) return;
    options_.by = by;
    if (!sample_released_) current_ = tally(by);
}

void LiveView::release_sample() {
    snapshot_.drop_sites();
    current_ = {};
    sample_released_ = true;
}

void LiveView::mark_gone(std::string reason) { gone_ = std::move(reason); }

int64_t LiveView::growth_of(uint32_t row) const {
    const auto& first_live = memory().first_live;
    const RowKey key = key_of(row);
    const auto first = std::lower_bound(first_live.begin(), first_live.end(), key, key_before);
    const uint64_t before = first == first_live.end() || !(first->first == key) ? 0 : first->second;
    return static_cast<int64_t>(current_.rows[row].live_bytes.value()) - static_cast<int64_t>(before);
}

bool LiveView::kept(uint32_t row) {
    if (options_.focus.empty() || options_.by == Grouping::ruby) return true;
    const auto [entry, is_new] = memory().kept.try_emplace(key_of(row), false);
    if (is_new)
        entry->second =
            matcher_->keeps(FirstRecordRow(snapshot_.sites[current_.rows[row].first_site], options_.by).row());
    return entry->second;
}

const std::string& LiveView::label_of(const ReportRow& row) {
    const auto [entry, is_new] = memory().labels.try_emplace(key_of(row, options_.by));
    if (is_new) {
        // The row has no frames either, by which site_label would name it "(no stack)".
        if (options_.by == Grouping::ruby && !row.overflow && !row.innermost_ruby()) {
            entry->second = "(no Ruby frame)";
        } else {
            const std::string label = site_label(report_row_json(row, *symbolizer_));
            entry->second = options_.full_names ? label : short_site_label(label);
        }
    }
    return entry->second;
}

std::vector<LiveView::ShownRow> LiveView::ranked(std::size_t count) {
    const auto key = [&](const ShownRow& shown) {
        const auto live = static_cast<int64_t>(current_.rows[shown.row].live_bytes.value());
        return options_.order == LiveOrder::growth ? std::make_tuple(shown.growth, live)
                                                   : std::make_tuple(live, shown.growth);
    };
    const auto before = [&](const ShownRow& a, const ShownRow& b) {
        return std::make_tuple(key(a), current_.rows[b.row].id) > std::make_tuple(key(b), current_.rows[a.row].id);
    };
    // The rows that fit, not every row sorted at each redraw.
    BestOf<ShownRow, decltype(before)> best(count, before);
    for (uint32_t row = 0; row < current_.rows.size(); ++row)
        if (kept(row)) best.offer({row, growth_of(row)});
    return std::move(best).take();
}

std::vector<std::string> LiveView::header() {
    const Counters& totals = snapshot_.totals;
    std::vector<std::string> lines;
    lines.push_back("leakwrap-report top  pid " + std::to_string(snapshot_.pid) + "  " +
                    printable(snapshot_.command_line) + "  (sample " + std::to_string(samples_) + ", " +
                    elapsed_clock(seconds_, false) + ")");
    lines.push_back(
        "live " + human_bytes(totals.live_bytes()) + " in " + std::to_string(totals.live_blocks()) + " blocks, " +
        signed_human_bytes(static_cast<double>(totals.live_bytes()) - static_cast<double>(first_live_bytes_)) +
        " since the view started; " + std::to_string(totals.allocs) + " allocs, " + std::to_string(totals.frees) +
        " frees; " + std::to_string(sites_in_use_) + " sites");
    if (const auto& memory = snapshot_.memory)
        lines.push_back("RSS " + human_bytes(memory->rss()) + ": anon " + human_bytes(memory->rss_anon) + ", file " +
                        human_bytes(memory->rss_file) + ", shared " + human_bytes(memory->rss_shmem) +
                        " (leakwrap's segment " + human_bytes(memory->segment_resident) + ", its tables " +
                        human_bytes(memory->leakwrap_private) + " in anon)" +
                        // Summed over a tree, RSS counts a shared page in each process.
                        (snapshot_.members.empty() ? "" : "; PSS " + human_bytes(memory->pss)));
    // Which part of RSS grows, live blocks or what malloc keeps free, as the report's line says.
    if (const std::optional<MemoryParts> parts = explain_memory(snapshot_))
        lines.push_back("RSS explained: " + memory_parts_summary(*parts));
    if (const std::optional<AllocatorAccount> account = allocator_account(snapshot_))
        lines.push_back("allocator: " + allocator_account_brief(*account));
    if (!snapshot_.members.empty()) {
        std::string processes = "processes: " + std::to_string(snapshot_.members.size()) + " merged:";
        for (const TreeMember& member : snapshot_.members)
            processes += " " + std::to_string(member.pid) + " " + human_bytes(member.totals.live_bytes()) + ";";
        processes.pop_back();
        lines.push_back(processes);
    }
    if (!gone_.empty()) lines.push_back(printable(gone_) + ": its last sample stays on screen");
    lines.push_back(std::string("sorted by ") +
                    (options_.order == LiveOrder::live ? "live bytes" : "growth since the view started") +
                    "  (keys: l live bytes, g growth, r by " +
                    (options_.by == Grouping::ruby ? "native site" : "Ruby line") + ", q quit)");
    return lines;
}

std::vector<std::string> LiveView::render(std::size_t width, std::size_t height) {
    std::vector<std::string> lines = header();
    const std::size_t room = height > lines.size() ? height - lines.size() : 0;
    if (!sample_released_) last_table_ = table(room);
    lines.insert(lines.end(), last_table_.begin(), last_table_.end());
    if (lines.size() > height) lines.resize(height);
    for (std::string& line : lines) line = fitted(line, width);
    return lines;
}

// The focus line, the column titles and as many rows as fit in `room` lines.
std::vector<std::string> LiveView::table(std::size_t room) {
    std::vector<std::string> lines;
    if (!options_.focus.empty()) {
        std::size_t kept_rows = 0;
        uint64_t kept_live_bytes = 0;
        for (uint32_t row = 0; row < current_.rows.size(); ++row)
            if (kept(row)) {
                ++kept_rows;
                kept_live_bytes += current_.rows[row].live_bytes.value();
            }
        lines.push_back("focus (" + printable(options_.focus.description()) + "): " + std::to_string(kept_rows) +
                        " of " + std::to_string(current_.all_rows) +
                        (options_.by == Grouping::ruby ? " Ruby lines, " : " sites, ") + human_bytes(kept_live_bytes) +
                        " live");
    }
    lines.push_back(table_row("ID", "LIVE", "BLOCKS", "GROWTH", options_.by == Grouping::ruby ? "RUBY LINE" : "SITE"));
    const std::vector<ShownRow> shown_rows = ranked(room > lines.size() ? room - lines.size() : 0);
    // Made whole, those alone; make_rows gives them in the order of their numbers.
    std::vector<bool> wanted(current_.assignment.row_count());
    std::vector<uint32_t> numbers;
    for (const ShownRow& shown : shown_rows) {
        wanted[shown.row] = true;
        numbers.push_back(shown.row);
    }
    std::sort(numbers.begin(), numbers.end());
    const std::vector<ReportRow> made = make_rows(snapshot_, options_.by, current_.assignment, &wanted);
    for (const ShownRow& shown : shown_rows) {
        const ReportRow& row = made[static_cast<std::size_t>(
            std::lower_bound(numbers.begin(), numbers.end(), shown.row) - numbers.begin())];
        lines.push_back(table_row(std::to_string(row.id), human_bytes(row.counters.live_bytes()),
                                  std::to_string(row.counters.live_blocks()),
                                  signed_human_bytes(static_cast<double>(shown.growth)), label_of(row)));
    }
    return lines;
}

}  // namespace leakwrap
