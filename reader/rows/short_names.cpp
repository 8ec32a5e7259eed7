#include "short_names.h"

#include <array>
#include <optional>

namespace leakwrap {
namespace {

constexpr std::string_view kEllipsis = "…";
constexpr std::string_view kOperator = "operator";
constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";

bool is_identifier_character(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The length of the operator's symbol after "operator" at `at` ("<<", "()", "[]", "->*"), so
// that its brackets are not taken for a template or parameter list; 0 for operator new and
// conversion operators, whose names are words.
std::size_t operator_symbol_length(std::string_view name, std::size_t at) {
    std::size_t end = at;
    if (name.substr(at, 2) == "()" || name.substr(at, 2) == "[]") return 2;
    constexpr std::string_view kSymbols = "<>=!+-*/%^&|~,";
    while (end < name.size() && kSymbols.find(name[end]) != std::string_view::npos) ++end;
    return end - at;
}

// Copies `name` with the contents of every outermost bracket pair of the kinds asked for
// replaced by "…"; nullopt if the brackets do not balance (then the name is not what we think).
std::optional<std::string> elided(std::string_view name, bool templates, bool parameters) {
    std::string result;
    // The brackets open at this point, innermost last; elision happens inside the outermost
    // one that is elided.
    std::string open;
    std::size_t elided_depth = 0;  // depth of the bracket being elided; 0: none
    const auto copy = [&](std::string_view text) {
        if (elided_depth == 0) result += text;
    };
    for (std::size_t i = 0; i < name.size();) {
        const bool word_start = i == 0 || !is_identifier_character(name[i - 1]);
        if (word_start && name.substr(i, kOperator.size()) == kOperator &&
            (i + kOperator.size() == name.size() || !is_identifier_character(name[i + kOperator.size()]))) {
            const std::size_t length = kOperator.size() + operator_symbol_length(name, i + kOperator.size());
            copy(name.substr(i, length));
            i += length;
            continue;
        }
        if (name.substr(i, kAnonymousNamespace.size()) == kAnonymousNamespace) {
            copy(kAnonymousNamespace);
            i += kAnonymousNamespace.size();
            continue;
        }
        const char c = name[i];
        if (c == '<' || c == '(') {
            open += c;
            const bool elide = c == '<' ? templates : parameters;
            if (elided_depth == 0) {
                result += c;
                // "()" stays as it is: nothing to elide.
                if (elide && !(c == '(' && i + 1 < name.size() && name[i + 1] == ')')) {
                    elided_depth = open.size();
                    result += kEllipsis;
                }
            }
        } else if (c == '>' || c == ')') {
            if (open.empty() || open.back() != (c == '>' ? '<' : '(')) return std::nullopt;
            if (elided_depth == open.size()) elided_depth = 0;
            open.pop_back();
            copy(std::string_view(&name[i], 1));
        } else {
            copy(std::string_view(&name[i], 1));
        }
        ++i;
    }
    if (!open.empty()) return std::nullopt;
    return result;
}

}  // namespace

std::string short_function_name(std::string_view name, std::size_t max_length) {
    if (name.size() <= max_length) return std::string(name);
    const auto without_templates = elided(name, true, false);
    if (!without_templates) return std::string(name);
    if (without_templates->size() <= max_length) return *without_templates;
    return elided(name, true, true).value_or(*without_templates);
}

std::string short_site_label(std::string_view label, std::size_t max_length) {
    if (label.starts_with("ruby ") || label.starts_with("[")) return std::string(label);
    // The location is the last parenthesized group, after a space, with no bracket inside.
    const std::size_t open = label.rfind(" (");
    const bool located = open != std::string_view::npos && label.ends_with(")") &&
                         label.substr(open + 2).find_first_of("()<>") == label.size() - open - 3;
    if (!located) return short_function_name(label, max_length);
    return short_function_name(label.substr(0, open), max_length) + std::string(label.substr(open));
}

}  // namespace leakwrap
