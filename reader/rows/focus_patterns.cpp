#include "focus_patterns.h"

#include <algorithm>

namespace leakwrap {
namespace {

// `optimize`: a pattern is compiled once and searched in every frame of every row.
constexpr auto kSyntax = std::regex::ECMAScript | std::regex::optimize;

bool any_found(const auto& patterns, std::string_view text) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const auto& pattern) { return std::regex_search(text.begin(), text.end(), pattern.regex); });
}

}  // namespace

FocusPatterns::FocusPatterns(const std::vector<std::string>& focus, const std::vector<std::string>& ignore) {
    for (const std::string& text : focus) focus_.push_back({text, std::regex(text, kSyntax)});
    for (const std::string& text : ignore) ignore_.push_back({text, std::regex(text, kSyntax)});
}

FocusVerdict FocusPatterns::verdict(std::string_view text) const {
    return {any_found(focus_, text), any_found(ignore_, text)};
}

std::string FocusPatterns::description() const {
    std::string description;
    for (const auto& [option, patterns] : {std::pair{"--focus ", &focus_}, std::pair{"--ignore ", &ignore_}})
        for (const Pattern& pattern : *patterns)
            description += (description.empty() ? "" : " ") + std::string(option) + pattern.text;
    return description;
}

std::string focus_pattern_error(const std::string& pattern) {
    try {
        std::regex(pattern, kSyntax);
        return "";
    } catch (const std::regex_error& error) {
        return "not a regular expression: " + pattern + " (" + error.what() + ")";
    }
}

}  // namespace leakwrap
