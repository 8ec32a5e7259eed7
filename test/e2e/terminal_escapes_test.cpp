// A profiled program's command line and executable path are the program's to choose, and a
// report is read on a terminal: their control characters must arrive escaped in every text
// output (the report, --list, an error), never raw; JSON keeps them, escaped its own way.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kRetitle = "\x1b]0;owned\x07";  // sets the terminal's title
const std::string kClear = "\x1b[2J\nsecond line";

bool has_raw_control(const std::string& text) {
    for (const char c : text)
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) return true;
    return false;
}

// A directory named `name`, inside a temporary one.
class Directory {
public:
    explicit Directory(const std::string& name) : path_(root_.path() / name) { fs::create_directory(path_); }
    const fs::path& path() const { return path_; }

private:
    TemporaryDirectory root_;
    fs::path path_;
};

TEST(TerminalEscapes, CommandLineAndExecutablePathArePrintedEscaped) {
    const Directory directory("bin" + kRetitle);
    const fs::path program = directory.path() / "alloc_kinds";
    fs::copy_file(paths::program("alloc_kinds"), program);
    Target target({program.string(), kRetitle, kClear}, Environment::profiled());
    target.wait_ready();
    const std::string pid = std::to_string(target.pid());

    const Completed text = run_report({pid});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const std::string header = text.out.substr(0, text.out.find('\n'));
    EXPECT_FALSE(has_raw_control(text.out)) << text.out;
    EXPECT_NE(header.find("bin\\x1b]0;owned\\x07/alloc_kinds"), std::string::npos) << header;
    EXPECT_NE(header.find(" \\x1b]0;owned\\x07 \\x1b[2J\\x0asecond line"), std::string::npos) << header;

    const Completed list = run_report({"--list"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    std::istringstream lines(list.out);
    std::string listed;
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with(pid + " ")) listed = line;
    EXPECT_FALSE(has_raw_control(listed)) << listed;
    EXPECT_NE(listed.find("\\x1b[2J\\x0asecond line"), std::string::npos) << list.out;

    // JSON carries the true strings.
    const nlohmann::json json = report_json(target.pid());
    EXPECT_EQ(json.at("exe"), fs::canonical(program).string());
    EXPECT_NE(json.at("command_line").get<std::string>().find(kRetitle + " " + kClear), std::string::npos);
    EXPECT_EQ(target.release_and_wait(), 0);

    const Completed error = run_report({"--segment", (directory.path() / ("none" + kClear)).string()});
    EXPECT_EQ(error.exit_code, 1);
    EXPECT_FALSE(has_raw_control(error.err)) << error.err;
    EXPECT_NE(error.err.find("none\\x1b[2J\\x0asecond line"), std::string::npos) << error.err;
}

}  // namespace
}  // namespace leakwrap::e2e
