// The section on serve in docs/integrations.md: every option of `serve --help` with its default, and the Prometheus
// configuration and alert rule it gives are ones Prometheus accepts (promtool).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "documentation.h"
#include "harness.h"
#include "prometheus_support.h"
#include "temporary_directory.h"

namespace leakwrap::ecosystem {
namespace {

std::string serve_section() {
    const std::string page = read_file(LEAKWRAP_SOURCE_DIR "/docs/integrations.md");
    const std::size_t start = page.find("## Serving a host over HTTP");
    EXPECT_NE(start, std::string::npos) << "docs/integrations.md has no section on serve";
    return page.substr(start, page.find("\n## ", start + 1) - start);
}

// The first fenced code block after `marker`.
std::string code_block_after(const std::string& text, const std::string& marker) {
    const std::size_t at = text.find(marker);
    if (at == std::string::npos) return "";
    const std::size_t open = text.find("```\n", at);
    const std::size_t close = text.find("\n```", open + 4);
    return text.substr(open + 4, close - open - 3);
}

TEST(ReadmeServe, HasEveryOptionOfServeWithItsDefault) {
    const std::string section = serve_section();
    const e2e::Completed help = e2e::run_report({"serve", "--help"});
    ASSERT_EQ(help.exit_code, 0) << help.err;
    for (const HelpOption& option : parse_help(help.out).options) {
        if (option.names.front() == "-h") continue;
        const std::string name = option.names.back();
        const std::size_t row = section.find("| `" + name);
        ASSERT_NE(row, std::string::npos) << name << " has no row in the serve table of docs/integrations.md";
        const std::string line = section.substr(row, section.find('\n', row) - row);
        if (option.default_value) {
            EXPECT_TRUE(line.find("| `" + *option.default_value + "` |") != std::string::npos ||
                        line.find("| " + *option.default_value + " |") != std::string::npos)
                << name << ": --help says default " << *option.default_value << "; " << line;
        }
    }
}

TEST(ReadmeServe, PromtoolAcceptsItsScrapeConfigurationAndAlertRule) {
    if (!have_prometheus()) GTEST_SKIP() << "no promtool (scripts/setup.sh installs prometheus)";
    const std::string section = serve_section();
    TemporaryDirectory directory;
    const auto rules = directory.path() / "rules.yml";
    const auto configuration = directory.path() / "prometheus.yml";
    std::ofstream(rules) << code_block_after(section, "An alert on a site");
    std::ofstream(configuration) << code_block_after(section, "let\nPrometheus scrape it");
    for (const std::vector<std::string>& check :
         {std::vector<std::string>{LEAKWRAP_PROMTOOL, "check", "rules", rules.string()},
          std::vector<std::string>{LEAKWRAP_PROMTOOL, "check", "config", configuration.string()}}) {
        const e2e::Completed checked = e2e::run(check, e2e::Environment::bare());
        EXPECT_EQ(checked.exit_code, 0) << check[1] << " " << check[2] << ": " << checked.out << checked.err;
    }
}

}  // namespace
}  // namespace leakwrap::ecosystem
