// The report for scripts: totals, the ranked rows with their resolved frames, and always the
// size-class table as "bins".
#pragma once

#include "report_input.h"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <ostream>

namespace leakwrap {

void write_json_report(std::ostream& out, const ReportInput& input);

// One row's object in "sites" (without the per-process split of a merged tree): what time
// analysis labels a site by (site_label.h), for the few rows that `top` shows.
nlohmann::json report_row_json(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime = false);

// The same report as values, for those that take it in without the text: `head` gets every
// member but "sites", then `site` each ranked row's object in turn, none of them kept.
void visit_json_report(const ReportInput& input, const std::function<void(const nlohmann::json& head)>& head,
                       const std::function<void(const nlohmann::json& site)>& site);

}  // namespace leakwrap
