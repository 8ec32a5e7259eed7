// The report for spreadsheets: one line per ranked row (or, with --bins, per size class).
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

void write_csv_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
