#include "focus_options.h"
#include "gate.h"
#include "quiet_validator.h"
#include "site_focus.h"
#include "subcommands.h"
#include "suspects.h"
#include "suspects_output.h"
#include "watch_duration.h"

#include <algorithm>
#include <climits>
#include <iostream>
#include <memory>

namespace leakwrap {
namespace {

struct SuspectsCommandLine {
    std::string series;
    int64_t top = 20;
    std::string format = "text";
    std::vector<std::string> fail_on;
    std::string max_growth = "1MiB";
    FocusCommandLine focus;
    bool full_names = false;
};

std::string byte_size_error(const std::string& text) {
    return parse_byte_size(text) ? "" : "not a size like 0B, 512KiB, 1MiB or 2GiB: " + text;
}

}  // namespace

Subcommand add_suspects_subcommand(CLI::App& app) {
    auto line = std::make_shared<SuspectsCommandLine>();
    CLI::App* suspects = app.add_subcommand(
        "suspects",
        "Rank the sites of a watch series and classify them by the process's own work (its "
        "allocations), so idle time counts for nothing: leak (keeps allocating and (almost) never "
        "frees: still grows over the last third of the work, retains >= 95% of what it allocated, "
        "never gives back), growing (grows the same way with R2 >= 0.8 but frees part of what it "
        "allocates: a partial leak, or garbage a collector has not reached yet), plateau (grew, "
        "then held: a cache, a warm-up), churn (gives back in bursts: a garbage collector, a "
        "pool; or no trend), flat. Each row shows its evidence: growth per million allocations and per hour, "
        "R2, the share of its allocations still live. "
        "Leaks first. Needs at least 3 samples");
    suspects->add_option("series", line->series, "Series file written by watch --out")
        ->required()
        ->type_name("FILE")
        ->check(quiet(CLI::ExistingFile));
    suspects->add_option("--top", line->top, "Show the N sites ranked first; 0 shows all (default: 20)")
        ->check(quiet(CLI::Range(int64_t{0}, int64_t{INT_MAX})));
    suspects->add_option("--format", line->format, "Output as text or json (default: text)")
        ->check(CLI::IsMember({"text", "json"}));
    add_focus_options(*suspects, line->focus,
                      "the site's label and its stack as the series keeps it: the functions, source files and Ruby "
                      "file:line of its frames (a module only for a frame without a function); the sites left out are "
                      "not ranked, nor judged by --fail-on leak");
    suspects->add_flag("--full-names", line->full_names,
                       "Text: show the sites' C++ names in full instead of shortened (default: off)");

    suspects
        ->add_option("--fail-on", line->fail_on,
                     "Exit with status 3 when the series shows it, each finding a line on stderr: "
                     "leak (a site classed leak), growth (the tracked live bytes grew by more than "
                     "--max-growth from the first to the last sample), rss (the RSS grew outside "
                     "every call site); repeat it or separate by commas (default: none)")
        ->delimiter(',')
        ->check(CLI::IsMember(std::vector<std::string>(std::begin(kGateCheckNames), std::end(kGateCheckNames))));
    suspects
        ->add_option("--max-growth", line->max_growth,
                     "With --fail-on growth, the growth allowed: a whole number and B, KiB, "
                     "MiB or GiB (default: 1MiB)")
        ->type_name("SIZE")
        ->check(quiet(CLI::Validator(byte_size_error, "SIZE")));

    return {suspects, [line] {
                std::vector<Sample> series = read_series(line->series);
                keep_focused_sites(series, line->focus.patterns());
                const SuspectRanking ranked = rank_suspects(series);
                const auto top = static_cast<std::size_t>(line->top);
                if (line->format == "json")
                    std::cout << suspects_json(series, ranked, top).dump(2) << '\n';
                else
                    write_suspects_text(std::cout, series, ranked, top, line->full_names);
                GateOptions gate{.checks = {}, .max_growth = *parse_byte_size(line->max_growth)};
                for (const std::string& name : line->fail_on)
                    gate.checks.push_back(
                        static_cast<GateCheck>(std::find(std::begin(kGateCheckNames), std::end(kGateCheckNames), name) -
                                               std::begin(kGateCheckNames)));
                const std::vector<std::string> failures = gate_failures(series, ranked, gate);
                std::cout.flush();
                for (const std::string& failure : failures) std::cerr << "leakwrap-report: gate: " << failure << '\n';
                return failures.empty() ? 0 : kExitGateFailed;
            }};
}

}  // namespace leakwrap
