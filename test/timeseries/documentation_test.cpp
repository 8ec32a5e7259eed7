// docs/watching.md, "Watching a process over time", documents every option of every time-analysis
// subcommand that `leakwrap-report <subcommand> --help` shows, with the same default.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

struct HelpOption {
    std::string name;           // the long name: --interval
    std::string default_value;  // as --help says it; empty if it says none
};

std::vector<HelpOption> options_of(const std::string& subcommand) {
    const Completed help = run_report({subcommand, "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    std::vector<HelpOption> options;
    const std::regex option_line(R"(^\s+(?:-\w,)?(--[\w-]+))");
    const std::regex default_value(R"(\(default: ([^)]*)\))");
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (std::regex_search(line, match, option_line) && match[1] != "--help") {
            options.push_back({match[1], ""});
        }
        if (!options.empty() && std::regex_search(line, match, default_value)) {
            options.back().default_value = match[1];
        }
    }
    return options;
}

// The paragraphs and table rows of the section on time analysis in docs/watching.md.
std::vector<std::string> watching_section_blocks() {
    std::ifstream in(std::string(LEAKWRAP_SOURCE_DIR) + "/docs/watching.md");
    const std::string page{std::istreambuf_iterator<char>(in), {}};
    const std::size_t start = page.find("## Watching a process over time");
    EXPECT_NE(start, std::string::npos);
    const std::string section = page.substr(start, page.find("\n## ", start + 1) - start);
    std::vector<std::string> blocks;
    std::istringstream lines(section);
    std::string block;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.starts_with("|")) {
            if (!block.empty()) blocks.push_back(block);
            block = line;
            continue;
        }
        block += "\n" + line;
    }
    blocks.push_back(block);
    return blocks;
}

TEST(Documentation, WatchingPageHasEveryOptionOfTheTimeAnalysisWithItsDefault) {
    const std::vector<std::string> blocks = watching_section_blocks();
    for (const char* subcommand : {"watch", "suspects", "diff", "plot"}) {
        SCOPED_TRACE(subcommand);
        const std::string introduction = "**`" + std::string(subcommand);
        const auto first = std::find_if(blocks.begin(), blocks.end(), [&](const std::string& b) {
            return b.find(introduction) != std::string::npos;
        });
        ASSERT_NE(first, blocks.end()) << "no paragraph introduces " << subcommand;
        const auto next = std::find_if(first + 1, blocks.end(),
                                       [](const std::string& b) { return b.find("**`") != std::string::npos; });
        for (const HelpOption& option : options_of(subcommand)) {
            // The last mention is where it is documented (its table row, or the paragraph of
            // options); earlier ones only refer to it.
            const auto documented =
                std::find_if(std::make_reverse_iterator(next), std::make_reverse_iterator(first),
                             [&](const std::string& b) { return b.find("`" + option.name) != std::string::npos; });
            ASSERT_NE(documented, std::make_reverse_iterator(first)) << option.name << " is not in docs/watching.md";
            if (!option.default_value.empty()) {
                EXPECT_NE(documented->find(option.default_value), std::string::npos)
                    << option.name << ": --help says default " << option.default_value
                    << ", docs/watching.md says: " << *documented;
            }
        }
    }
}

}  // namespace
}  // namespace leakwrap::e2e
