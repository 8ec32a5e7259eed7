#include "plot_html.h"
#include "output_file.h"
#include "plot_svg.h"
#include "quiet_validator.h"
#include "subcommands.h"
#include "suspects.h"

#include <climits>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace leakwrap {
namespace {

struct PlotCommandLine {
    std::string series;
    std::string svg;
    std::string html;
    int64_t top = kDefaultPlotTop;
};

void write_file(const std::string& path, const std::string& content) {
    OutputFile out(path);
    out.stream() << content;
    out.close();
}

}  // namespace

Subcommand add_plot_subcommand(CLI::App& app) {
    auto line = std::make_shared<PlotCommandLine>();
    CLI::App* plot =
        app.add_subcommand("plot",
                           "Chart a watch series as SVG: live bytes over time of the sites that grew most (from the "
                           "first to the last sample) and, below, of the size classes that changed");
    plot->add_option("series", line->series, "Series file written by watch --out")
        ->required()
        ->type_name("FILE")
        ->check(quiet(CLI::ExistingFile));
    plot->add_option("-o,--out", line->svg, "SVG file to write")->type_name("FILE")->required();
    plot->add_option("--top", line->top,
                     "Chart the N sites that grew most, and at most N size classes (default: " +
                         std::to_string(kDefaultPlotTop) + ")")
        ->check(quiet(CLI::Range(int64_t{1}, int64_t{10})));
    plot->add_option("--html", line->html,
                     "Also write one self-contained HTML page with the chart and the suspects "
                     "table (needs at least 3 samples) (default: none)")
        ->type_name("FILE");

    return {plot, [line] {
                const std::vector<Sample> series = read_series(line->series);
                if (series.empty()) throw std::runtime_error(line->series + " has no samples");
                const std::string svg = chart_svg(series, static_cast<std::size_t>(line->top));
                write_file(line->svg, svg);
                if (!line->html.empty()) write_file(line->html, html_report(series, svg, rank_suspects(series)));
                return 0;
            }};
}

}  // namespace leakwrap
