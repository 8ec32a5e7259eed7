// `leakwrap-report top`: what the live view shows of a process, sample after sample — the totals,
// RSS, and the sites ranked by live bytes or by their growth since the view started — as the
// lines of one screen. The terminal itself is the command line's (cli/top_subcommand.cpp).
//
// A Rails process has ~120,000 sites. Every sample counts all of them, but only the rows on the
// screen are symbolized, and their labels are kept from one sample to the next.
#pragma once

#include "focus_patterns.h"
#include "process_identity.h"
#include "report_rows.h"
#include "row_selection.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

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
    FocusPatterns focus;      // --focus, --ignore: the rows kept
    bool full_names = false;  // C++ names as they are, not shortened
    SymbolizerOptions symbolizer;  // --libc-lines
};

class LiveView {
public:
    explicit LiveView(LiveViewOptions options);

    // A new sample of the process. The first one is where growth is counted from.
    void update(Snapshot snapshot, double seconds_since_start);
    // The process is gone (or its segment): the view keeps showing its last sample, saying so.
    void mark_gone(std::string reason);

    LiveOrder order() const { return options_.order; }
    void set_order(LiveOrder order) { options_.order = order; }

    // One screen of at most `height` lines, none wider than `width` characters.
    std::vector<std::string> render(std::size_t width, std::size_t height);

private:
    struct ShownRow {
        const ReportRow* row;
        int64_t growth;
    };

    int64_t growth_of(const ReportRow& row) const;
    bool kept(const ReportRow& row);
    const std::string& label_of(const ReportRow& row);
    std::vector<ShownRow> ranked(std::size_t count);
    std::vector<std::string> header();

    LiveViewOptions options_;
    Snapshot snapshot_;
    std::vector<ReportRow> rows_;
    std::size_t samples_ = 0;
    double seconds_ = 0;
    std::string gone_;
    uint64_t first_live_bytes_ = 0;
    std::unordered_map<uint32_t, uint64_t> first_live_;  // live bytes by row id at the first sample

    // What was resolved stays while the module list does (ProcessSymbolizer); the labels and the
    // focus verdicts are by row id (a row's stack is fixed for as long as the process runs) and
    // go with the symbolizer they came from.
    ProcessSymbolizer symbolizers_;
    Symbolizer* symbolizer_ = nullptr;
    std::unique_ptr<RowMatcher> matcher_;
    std::unordered_map<uint32_t, std::string> labels_;
    std::unordered_map<uint32_t, bool> kept_;
};

}  // namespace leakwrap
