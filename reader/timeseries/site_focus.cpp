#include "site_focus.h"

#include <algorithm>
#include <string_view>

namespace leakwrap {
namespace {

// Calls `each` with every piece of text between separators.
template <typename Each>
void for_each_piece(std::string_view text, std::string_view separators, Each each) {
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find_first_of(separators, start), text.size());
        if (end > start) each(text.substr(start, end - start));
        start = end + 1;
    }
}

}  // namespace

bool keeps_site(const SampleSite& site, const FocusPatterns& patterns) {
    FocusVerdict verdict = patterns.verdict(site.label);
    // A stack key is "ruby.rb:3|ruby.rb:9|;function@file.c:12;module.so+0x1f@" (site_stack_key):
    // Ruby frames between bars, then each native frame, its function or module+offset before
    // the last '@' and its source after it.
    for_each_piece(site.stack_key, ";|", [&](std::string_view frame) {
        const std::size_t at = frame.rfind('@');
        if (at == std::string_view::npos) {
            verdict |= patterns.verdict(frame);
            return;
        }
        verdict |= patterns.verdict(frame.substr(0, at));
        if (at + 1 < frame.size()) verdict |= patterns.verdict(frame.substr(at + 1));
    });
    return patterns.keeps(verdict);
}

void keep_focused_sites(std::vector<Sample>& samples, const FocusPatterns& patterns) {
    if (patterns.empty()) return;
    for (Sample& sample : samples)
        std::erase_if(sample.sites, [&](const SampleSite& site) { return !keeps_site(site, patterns); });
}

}  // namespace leakwrap
