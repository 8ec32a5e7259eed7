// What a fault may cost a profiled program: exactly one warning line on stderr, nothing else.
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace leakwrap::e2e {

std::vector<std::string> lines_of(const std::string& text);

// The profiled run must print what the bare one prints, plus exactly one warning line on
// stderr, which is returned.
std::string expect_same_output_and_one_warning(const Completed& bare, const Completed& with);
// Runs argv bare and with `profiled`, as above.
std::string expect_same_output_and_one_warning(const std::vector<std::string>& argv, const Environment& profiled);

}  // namespace leakwrap::e2e
