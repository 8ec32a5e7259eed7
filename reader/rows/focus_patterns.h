// --focus and --ignore: regular expressions that keep only the rows with a frame they match, or
// drop those rows. One definition of "a frame matches" for the reports (which have resolved
// frames) and for time analysis (which has the labels and stack keys a series kept).
#pragma once

#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

// What the patterns say about one frame, or about all of a row's frames together.
struct FocusVerdict {
    bool focused = false;  // some --focus pattern matched
    bool ignored = false;  // some --ignore pattern matched

    FocusVerdict& operator|=(const FocusVerdict& other) {
        focused = focused || other.focused;
        ignored = ignored || other.ignored;
        return *this;
    }
};

class FocusPatterns {
public:
    FocusPatterns() = default;
    // ECMAScript regular expressions, searched for anywhere in a text (so a plain word matches
    // as a substring), case-sensitive. Throws std::regex_error for one that does not compile.
    FocusPatterns(const std::vector<std::string>& focus, const std::vector<std::string>& ignore);

    // No pattern at all: every row is kept, and nothing needs to be matched.
    bool empty() const { return focus_.empty() && ignore_.empty(); }

    // The verdict on one text: a function name, a source file, a module path, a Ruby file:line.
    FocusVerdict verdict(std::string_view text) const;

    // Whether a row whose frames together earned `verdict` is kept: it matched a --focus pattern
    // (or none was given) and no --ignore pattern.
    bool keeps(const FocusVerdict& verdict) const { return (focus_.empty() || verdict.focused) && !verdict.ignored; }

    // "--focus leak --ignore '^std::'": what was asked, for a report's header.
    std::string description() const;

private:
    struct Pattern {
        std::string text;
        std::regex regex;
    };
    std::vector<Pattern> focus_;
    std::vector<Pattern> ignore_;
};

// Why a pattern does not compile, for a usage error; "" when it does.
std::string focus_pattern_error(const std::string& pattern);

}  // namespace leakwrap
