// The installed man pages document every option that the installed programs' --help shows, with
// the same default, and every option and setting of the tables of docs/using.md with the default it gives.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "documentation.h"
#include "harness.h"
#include "installed_tree.h"

namespace leakwrap::ecosystem {
namespace {

std::string help_of(const std::vector<std::string>& argv) {
    const e2e::Completed help = e2e::run(argv, e2e::Environment::bare());
    EXPECT_EQ(help.exit_code, 0) << help.err;
    return help.out;
}

// Every option of `help` has an entry in `section` of the page, saying its default; but for
// -h, --help where `help_said_once` (the page says once that every subcommand takes it).
void expect_documented(const Help& help, const ManPage& page, const std::string& section, bool help_said_once = false) {
    ASSERT_FALSE(help.options.empty()) << "no options parsed from --help";
    for (const HelpOption& option : help.options) {
        for (const std::string& name : option.names) {
            if (help_said_once && (name == "-h" || name == "--help")) continue;
            const ManEntry* entry = find_entry(page, section, name);
            ASSERT_NE(entry, nullptr) << name << " has no entry in section " << section;
            if (option.default_value) {
                // The entry's text is lowercase; so must the default be, for units such as 1MiB.
                EXPECT_NE(entry->text.find("default: " + lowercase(*option.default_value)), std::string::npos)
                    << name << " in " << section << ": --help says default " << *option.default_value
                    << ", the man page says: " << entry->text;
            }
            if (option.required) {
                EXPECT_NE(entry->text.find("required"), std::string::npos)
                    << name << " in " << section << " is required";
            }
        }
    }
}

class ManPages : public ::testing::Test {
protected:
    InstalledTree installed;
};

TEST_F(ManPages, ReportPageHasEveryOptionOfEveryCommandWithItsDefault) {
    const std::string report = installed.bin("leakwrap-report");
    const ManPage page = parse_man_page(read_file(installed.man("man1/leakwrap-report.1")));
    const Help help = parse_help(help_of({report, "--help"}));
    expect_documented(help, page, "OPTIONS");
    for (const std::string& subcommand : help.subcommands) {
        SCOPED_TRACE("subcommand " + subcommand);
        ASSERT_TRUE(page.contains(subcommand)) << "no .SS " << subcommand;
        expect_documented(parse_help(help_of({report, subcommand, "--help"})), page, subcommand, true);
    }
}

TEST_F(ManPages, ReportPageNamesEveryValueOfFormat) {
    const ManPage page = parse_man_page(read_file(installed.man("man1/leakwrap-report.1")));
    for (const char* format : {"text", "json", "csv", "folded", "prometheus", "openmetrics", "pprof"})
        EXPECT_NE(find_entry(page, "FORMATS", format), nullptr) << format;
}

TEST_F(ManPages, LauncherPageHasEveryOptionWithItsDefault) {
    const ManPage page = parse_man_page(read_file(installed.man("man1/leakwrap.1")));
    expect_documented(parse_help(help_of({installed.bin("leakwrap"), "--help"})), page, "OPTIONS");
}

TEST_F(ManPages, LibraryPageHasEverySettingOfTheDocsWithItsDefault) {
    const ManPage page = parse_man_page(read_file(installed.man("man7/libleakwrap.7")));
    // docs/using.md rows: | `LEAKWRAP_DEPTH` | 16 | meaning |
    static const std::regex setting_row(R"(^\| `(LEAKWRAP_[A-Z_]+)` \| ([^|]+?) \|.*)");
    std::size_t settings = 0;
    std::istringstream readme(read_file(LEAKWRAP_SOURCE_DIR "/docs/using.md"));
    for (std::string line; std::getline(readme, line);) {
        std::smatch row;
        if (!std::regex_match(line, row, setting_row)) continue;
        ++settings;
        const std::string name = row[1], default_value = row[2];
        const ManEntry* entry = find_entry(page, "ENVIRONMENT", name);
        ASSERT_NE(entry, nullptr) << name;
        EXPECT_NE(entry->text.find("default: " + default_value), std::string::npos)
            << name << ": docs/using.md says default " << default_value << "; " << entry->text;
    }
    EXPECT_GE(settings, 5u) << "the settings table of docs/using.md was not found";
}

TEST_F(ManPages, ReportPageAgreesWithTheDocsOptionsTable) {
    const ManPage page = parse_man_page(read_file(installed.man("man1/leakwrap-report.1")));
    static const std::regex option_name(R"(`(--?[a-z][a-z-]*))");
    std::size_t options = 0;
    bool in_table = false;
    std::istringstream readme(read_file(LEAKWRAP_SOURCE_DIR "/docs/using.md"));
    for (std::string line; std::getline(readme, line);) {
        if (line.starts_with("#")) in_table = line == "### Options of `leakwrap-report`";
        if (!in_table || !line.starts_with("| `-")) continue;
        // | `--sort live\|allocs\|bytes` | `live` | meaning |: cells split at unescaped bars.
        std::vector<std::string> cells(1);
        for (std::size_t i = 1; i < line.size(); ++i) {
            if (line[i] == '|' && line[i - 1] != '\\')
                cells.emplace_back();
            else
                cells.back() += line[i];
        }
        ASSERT_GE(cells.size(), 3u) << line;
        const std::string names = cells[0];
        std::string default_value = cells[1];
        std::erase(default_value, '`');
        std::erase(default_value, ' ');
        for (auto it = std::sregex_iterator(names.begin(), names.end(), option_name); it != std::sregex_iterator();
             ++it) {
            ++options;
            const std::string name = (*it)[1];
            const ManEntry* entry = find_entry(page, "OPTIONS", name);
            ASSERT_NE(entry, nullptr) << name << " is in the table of docs/using.md but not in OPTIONS";
            if (!default_value.empty()) {
                EXPECT_NE(entry->text.find("default: " + default_value), std::string::npos)
                    << name << ": docs/using.md says default " << default_value << "; " << entry->text;
            }
        }
    }
    EXPECT_GE(options, 10u) << "the options table of leakwrap-report in docs/using.md was not found";
}

TEST_F(ManPages, BashCompletionCompletesFormatsFromTheInstalledHelp) {
    const std::string script = installed.data("bash-completion/completions/leakwrap-report");
    const e2e::Completed completion =
        e2e::run({LEAKWRAP_BASH, "-c",
                  "source \"$0\" && COMP_WORDS=(\"$1\" --format p) && COMP_CWORD=2 && _leakwrap_report && "
                  "echo \"${COMPREPLY[*]}\"",
                  script, installed.bin("leakwrap-report")},
                 e2e::Environment::bare());
    ASSERT_EQ(completion.exit_code, 0) << completion.err;
    EXPECT_EQ(completion.out, "prometheus pprof\n");
}

}  // namespace
}  // namespace leakwrap::ecosystem
