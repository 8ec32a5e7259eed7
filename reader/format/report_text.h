// The report for people: totals, then the ranked rows with their stacks (or, with --bins, the
// size-class table).
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

void write_text_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
