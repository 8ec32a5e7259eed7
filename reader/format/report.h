// One snapshot in the format its options name: the formats' single entry point.
#pragma once

#include "report_input.h"

#include <ostream>

namespace leakwrap {

// Dispatches on input.options.format.
void write_report(std::ostream& out, const ReportInput& input);

}  // namespace leakwrap
