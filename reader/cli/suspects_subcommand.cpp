#include "subcommands.h"
#include "suspects.h"
#include "suspects_output.h"

#include <climits>
#include <iostream>
#include <memory>

namespace leakwrap {
namespace {

struct SuspectsCommandLine {
    std::string series;
    int64_t top = 20;
    std::string format = "text";
};

}  // namespace

Subcommand add_suspects_subcommand(CLI::App& app) {
    auto line = std::make_shared<SuspectsCommandLine>();
    CLI::App* suspects = app.add_subcommand(
        "suspects",
        "Rank the sites of a watch series by sustained growth of live bytes (least-squares "
        "slope per hour, R2, share of rising steps, first and last live bytes) and classify "
        "them: leak (slope > 0, R2 >= 0.8, rising in >= 80% of steps, and the last third of the "
        "series still grows at >= 25% of the slope), plateau (grew, then varied by <= 10% of its "
        "range over the last third: a cache filling up), churn (rises and falls), flat (never "
        "changed). Leaks first. Needs at least 3 samples");
    suspects->add_option("series", line->series, "Series file written by watch --out")
        ->required()
        ->check(CLI::ExistingFile);
    suspects->add_option("--top", line->top, "Show the N sites ranked first; 0 shows all (default: 20)")
        ->check(CLI::Range(int64_t{0}, int64_t{INT_MAX}));
    suspects->add_option("--format", line->format, "Output as text or json (default: text)")
        ->check(CLI::IsMember({"text", "json"}));

    return {suspects, [line] {
                const std::vector<Sample> series = read_series(line->series);
                const std::vector<Suspect> ranked = rank_suspects(series);
                const auto top = static_cast<std::size_t>(line->top);
                if (line->format == "json")
                    std::cout << suspects_json(series, ranked, top).dump(2) << '\n';
                else
                    write_suspects_text(std::cout, series, ranked, top);
                return 0;
            }};
}

}  // namespace leakwrap
