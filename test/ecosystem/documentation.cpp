#include "documentation.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace leakwrap::ecosystem {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// "\-\-top" reads "--top"; font changes and the quotes that group macro arguments go.
std::string plain_roff(std::string line) {
    static const std::regex escapes(R"(\\f[BIRP]|\\&|")");
    line = std::regex_replace(line, escapes, "");
    static const std::regex dash(R"(\\-)");
    return std::regex_replace(line, dash, "-");
}

}  // namespace

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

Help parse_help(const std::string& text) {
    static const std::regex option_line(R"(^  (-[A-Za-z],)?(--[a-z][a-z0-9-]*))");
    static const std::regex subcommand_line(R"(^  ([a-z][a-z-]*)\s)");
    static const std::regex default_value(R"(default: ([^)]*)\))");
    Help help;
    std::string section;
    for (const std::string& line : lines_of(text)) {
        std::smatch match;
        if (!line.empty() && line[0] != ' ') {
            section = line;
        } else if (section == "Subcommands:" && std::regex_search(line, match, subcommand_line)) {
            help.subcommands.push_back(match[1]);
        } else if (std::regex_search(line, match, option_line)) {
            HelpOption option;
            if (match[1].matched) option.names.push_back(match[1].str().substr(0, 2));
            option.names.push_back(match[2]);
            option.required = line.find(" REQUIRED") != std::string::npos;
            help.options.push_back(option);
        }
        // A description may run over several lines; the default is in its last one.
        if (!help.options.empty() && section != "Subcommands:" && std::regex_search(line, match, default_value))
            help.options.back().default_value = match[1];
    }
    return help;
}

ManPage parse_man_page(const std::string& roff) {
    ManPage page;
    std::string section;
    ManEntry* entry = nullptr;
    bool tag_next = false;
    for (const std::string& raw : lines_of(roff)) {
        const std::string line = plain_roff(raw);
        if (line.starts_with(".SH ") || line.starts_with(".SS ")) {
            section = line.substr(4);
            entry = nullptr;
        } else if (line.starts_with(".TP")) {
            entry = &page[section].emplace_back();
            tag_next = true;
        } else if (line.starts_with(".PP")) {
            entry = nullptr;
        } else if (entry != nullptr && tag_next) {
            static const std::regex word(R"([^\s,|]+)");
            const std::string tag = line.starts_with(".") ? line.substr(line.find(' ') + 1) : line;
            for (auto it = std::sregex_iterator(tag.begin(), tag.end(), word); it != std::sregex_iterator(); ++it)
                entry->tag_words.insert(it->str());
            tag_next = false;
        } else if (entry != nullptr) {
            const std::string words = line.starts_with(".") ? line.substr(line.find(' ') + 1) : line;
            entry->text += lowercase(words) + ' ';
        }
    }
    return page;
}

const ManEntry* find_entry(const ManPage& page, const std::string& section, const std::string& word) {
    const auto found = page.find(section);
    if (found == page.end()) return nullptr;
    for (const ManEntry& entry : found->second)
        if (entry.tag_words.contains(word)) return &entry;
    return nullptr;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace leakwrap::ecosystem
