// `plot --html`: one self-contained HTML page, the chart inline and the suspects table under it,
// to attach to a ticket or open from a CI artifact.
#pragma once

#include "series.h"
#include "suspects.h"

#include <string>
#include <vector>

namespace leakwrap {

std::string html_report(const std::vector<Sample>& series, const std::string& chart_svg, const SuspectRanking& ranking);

}  // namespace leakwrap
