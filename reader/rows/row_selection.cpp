#include "row_selection.h"

#include "report_labels.h"

#include <stdexcept>

namespace leakwrap {

FocusVerdict RowMatcher::native_verdict(const ResolvedFrame& frame) {
    const auto [entry, is_new] = native_.try_emplace(&frame);
    if (is_new) {
        for (const auto& text : {frame.function, frame.file, frame.module})
            if (text) entry->second |= patterns_.verdict(*text);
    }
    return entry->second;
}

bool RowMatcher::keeps(const ReportRow& row) {
    FocusVerdict verdict;
    for (const uint64_t address : row.frames())
        for (const ResolvedFrame& frame : symbolizer_.resolve(address, row.module_generation()))
            verdict |= native_verdict(frame);
    for (const RubyLocation& location : row.ruby()) {
        std::string text = ruby_location_text(location);
        const auto found = ruby_.find(text);
        verdict |= found != ruby_.end()
                       ? found->second
                       : ruby_.emplace(text, patterns_.verdict(text)).first->second;
    }
    return patterns_.keeps(verdict);
}

RowSelection selected_rows(const Snapshot& snapshot, const ReportOptions& options,
                           Symbolizer& symbolizer) {
    RowSelection selection;
    selection.rows = report_rows(snapshot, options.by);
    selection.all_rows = selection.rows.size();
    if (options.site) {
        std::erase_if(selection.rows, [&](const ReportRow& row) { return row.id != *options.site; });
        if (selection.rows.empty())
            throw std::runtime_error("no site " + std::to_string(*options.site) +
                                     " in this report (an id is the row id that reports, watch, "
                                     "suspects and top print for the same process" +
                                     (options.by == Grouping::ruby ? ", under the same --by)" : ")"));
    } else if (!options.focus.empty()) {
        RowMatcher matcher(options.focus, symbolizer);
        std::erase_if(selection.rows, [&](const ReportRow& row) { return !matcher.keeps(row); });
    }
    selection.selected = options.site.has_value() || !options.focus.empty();
    for (const ReportRow& row : selection.rows) selection.counters += row.counters;
    return selection;
}

}  // namespace leakwrap
