// `leakwrap-report top`: what the live view shows of a process, sample after sample — the totals,
// RSS, and the rows (native sites or Ruby lines) ranked by live bytes or by their growth since
// the view started — as the lines of one screen. The terminal they are drawn on is held a layer
// up (live/terminal_screen.h).
//
// A Rails process has ~120,000 sites. Every sample counts all of them, but only the rows on the
// screen are symbolized, and their labels are kept from one sample to the next. Between samples
// the view gives back the sites and rows of the last one (release_sample), so that two samples
// are never held at once: the screen it drew stays as it was drawn.
#pragma once

#include "focus_patterns.h"
#include "process_identity.h"
#include "report_rows.h"
#include "row_selection.h"
#include "segment_snapshot.h"
#include "stack_digest.h"
#include "symbolizer.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace leakwrap {

enum class LiveOrder { live, growth };

std::optional<LiveOrder> live_order_from_name(std::string_view name);  // "live", "growth"

struct LiveViewOptions {
    LiveOrder order = LiveOrder::live;
    Grouping by = Grouping::native;  // one row per native site or per Ruby line
    FocusPatterns focus;             // --focus, --ignore: the rows kept
    bool full_names = false;         // C++ names as they are, not shortened
    SymbolizerOptions symbolizer;    // --libc-lines
};

class LiveView {
public:
    explicit LiveView(LiveViewOptions options);

    // A new sample of the process. The first one is where growth is counted from, under either
    // grouping.
    void update(Snapshot snapshot, double seconds_since_start);
    // Before the next sample is read: the last one's sites, stacks and rows are given back. Until
    // the next update, render() draws the rows as last drawn (sorting and grouping keys apply
    // from the next sample on), and if no sample comes, because the process is gone, for good.
    void release_sample();
    // The process is gone (or its segment): the view keeps showing its last sample, saying so.
    void mark_gone(std::string reason);

    LiveOrder order() const { return options_.order; }
    void set_order(LiveOrder order) { options_.order = order; }
    Grouping grouping() const { return options_.by; }
    void set_grouping(Grouping by);

    // One screen of at most `height` lines, none wider than `width` characters.
    std::vector<std::string> render(std::size_t width, std::size_t height);

private:
    // A row of the current sample as the ranking needs it: its live bytes and its first record,
    // whose stack (or Ruby line) is the row's. Only the rows on the screen are made whole, when
    // drawn, since a large process has tens of thousands of rows; and a tally keeps the live bytes
    // alone, not the row's Counters.
    struct RowTally {
        LiveSum live_bytes;
        uint32_t first_site = 0;  // position in snapshot_.sites
        uint32_t id = 0;          // the row's: its first record's
    };
    struct Tallies {
        RowAssignment assignment;
        std::vector<RowTally> rows;  // by row number
        std::size_t all_rows = 0;    // before --focus and --ignore
    };
    struct ShownRow {
        uint32_t row;  // number
        int64_t growth;
    };

    // What a row is from one sample to the next, as a digest: under --by native of its stack
    // (native and Ruby frames), under --by ruby of its Ruby file:line (or its being the overflow
    // row, or the one without a Ruby frame); never its id. A row takes the smallest id of its
    // records, and a record of a smaller id can join it later: one that was claimed but not yet
    // ready, or with --children one of an earlier process of the tree that reaches the stack or
    // the line after a later one did.
    using RowKey = StackDigest;
    struct RowKeyHash {
        std::size_t operator()(const RowKey& key) const { return static_cast<std::size_t>(key.first); }
    };
    // What is kept of the rows of one grouping, each grouping's by its own keys. The live bytes
    // at the first sample of every row that held some, sorted by key: 24 bytes a row, a third of
    // what a hash map's nodes take.
    struct RowMemory {
        std::vector<std::pair<RowKey, uint64_t>> first_live;
        std::unordered_map<RowKey, std::string, RowKeyHash> labels;
        std::unordered_map<RowKey, bool, RowKeyHash> kept;
    };

    RowKey key_of(const ReportRow& row, Grouping by) const;
    RowKey key_of(uint32_t row) const;  // of the current sample's row
    void remember_first_live(const Tallies& tallies, Grouping by);
    RowMemory& memory() { return memory_[static_cast<std::size_t>(options_.by)]; }
    const RowMemory& memory() const { return memory_[static_cast<std::size_t>(options_.by)]; }
    int64_t growth_of(uint32_t row) const;
    Tallies tally(Grouping by);
    bool kept(uint32_t row);
    const std::string& label_of(const ReportRow& row);
    std::vector<ShownRow> ranked(std::size_t count);
    std::vector<std::string> header();
    std::vector<std::string> table(std::size_t room);

    LiveViewOptions options_;
    Snapshot snapshot_;
    Tallies current_;  // of snapshot_, under options_.by
    std::size_t samples_ = 0;
    double seconds_ = 0;
    std::string gone_;
    uint64_t first_live_bytes_ = 0;
    bool sample_released_ = false;
    std::size_t sites_in_use_ = 0;         // of the last sample, which release_sample() gives back
    std::vector<std::string> last_table_;  // as render() last drew it

    // What was resolved stays while the module list does (ProcessSymbolizer); the labels and the
    // focus verdicts are by row key (what a row stands for is fixed for as long as the process
    // runs) and go with the symbolizer they came from.
    ProcessSymbolizer symbolizers_;
    Symbolizer* symbolizer_ = nullptr;
    std::unique_ptr<RowMatcher> matcher_;
    std::array<RowMemory, 2> memory_;  // by Grouping
    mutable std::string stack_bytes_;  // key_of()'s scratch
};

}  // namespace leakwrap
