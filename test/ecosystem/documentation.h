// Readers of the two kinds of documentation the tests hold against each other: a program's
// --help (CLI11's layout, which the launcher's hand-written help follows) and a roff man page.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace leakwrap::ecosystem {

struct HelpOption {
    std::vector<std::string> names;            // "-o", "--output"
    std::optional<std::string> default_value;  // from "(default: X)" or "(…, default: X)"
    bool required = false;                     // CLI11 says REQUIRED
};

struct Help {
    std::vector<HelpOption> options;
    std::vector<std::string> subcommands;
};

Help parse_help(const std::string& text);

std::string lowercase(std::string text);

// One tagged paragraph (.TP) of a man page, with roff escapes and fonts removed.
struct ManEntry {
    std::set<std::string> tag_words;  // "-o", "--output", "FILE"
    std::string text;                 // the paragraph, lowercase
};

// Entries by the section (.SH) or subsection (.SS) they appear in.
using ManPage = std::map<std::string, std::vector<ManEntry>>;

ManPage parse_man_page(const std::string& roff);

// The entry of `section` whose tag has `word`, if any.
const ManEntry* find_entry(const ManPage& page, const std::string& section, const std::string& word);

std::string read_file(const std::string& path);

}  // namespace leakwrap::ecosystem
