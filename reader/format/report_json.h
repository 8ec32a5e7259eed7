// The report for scripts: totals, the ranked rows with their resolved frames, and always the
// size-class table as "bins".
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

void write_json_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
