#include "one_warning.h"

#include <gtest/gtest.h>

#include <sstream>
#include <utility>

namespace leakwrap::e2e {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

std::string expect_same_output_and_one_warning(const Completed& bare, const Completed& with) {
    EXPECT_EQ(bare.exit_code, 0) << bare.err;
    EXPECT_EQ(with.exit_code, bare.exit_code) << with.err;
    EXPECT_EQ(with.out, bare.out);
    std::vector<std::string> warnings, other;
    for (std::string& line : lines_of(with.err))
        (line.starts_with("leakwrap[") ? warnings : other).push_back(std::move(line));
    EXPECT_EQ(other, lines_of(bare.err));
    EXPECT_EQ(warnings.size(), 1u) << with.err;
    return warnings.empty() ? std::string() : warnings.front();
}

std::string expect_same_output_and_one_warning(const std::vector<std::string>& argv, const Environment& profiled) {
    return expect_same_output_and_one_warning(run(argv, Environment::bare()), run(argv, profiled));
}

}  // namespace leakwrap::e2e
