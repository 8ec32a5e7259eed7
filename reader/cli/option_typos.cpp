#include "option_typos.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace leakwrap {
namespace {

constexpr std::size_t kMaxEdits = 2;

// Levenshtein distance: insertions, deletions and substitutions.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
    std::iota(previous.begin(), previous.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            current[j] =
                std::min({previous[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0), previous[j] + 1, current[j - 1] + 1});
        std::swap(previous, current);
    }
    return previous[b.size()];
}

void add_option_names(const CLI::App& app, std::vector<std::string>& names) {
    for (const CLI::Option* option : app.get_options()) {
        for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
        for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    }
}

}  // namespace

std::optional<std::string> closest_name(const CLI::App& app, const std::string& typed) {
    std::vector<std::string> names;
    if (typed.starts_with("-")) {
        add_option_names(app, names);
        for (const CLI::App* subcommand : app.get_subcommands()) add_option_names(*subcommand, names);
    } else {
        for (const CLI::App* subcommand : app.get_subcommands({})) names.push_back(subcommand->get_name());
    }
    // Under three letters anything is a few edits from anything.
    const std::size_t letters = typed.size() - std::min(typed.find_first_not_of('-'), typed.size());
    if (letters < 3) return std::nullopt;
    std::optional<std::string> best;
    std::size_t best_edits = std::min(kMaxEdits, letters / 2) + 1;
    for (const std::string& name : names) {
        // A prefix is where someone stopped typing the name.
        const std::size_t edits = name.starts_with(typed) ? 1 : edit_distance(typed, name);
        if (edits < best_edits && name != typed) {
            best = name;
            best_edits = edits;
        }
    }
    return best;
}

}  // namespace leakwrap
