#include "plot_html.h"

#include "change_units.h"
#include "plot_svg.h"
#include "suspects_output.h"
#include "report_labels.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace leakwrap {
namespace {

std::string cell(const std::string& text) { return "<td>" + escaped_markup(text) + "</td>"; }

}  // namespace

std::string html_report(const std::vector<Sample>& series, const std::string& chart_svg,
                        const SuspectRanking& ranking) {
    const std::string title = "leakwrap: pid " + std::to_string(series.front().pid);
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << escaped_markup(title)
         << "</title>\n"
         << "<style>body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px;color:#222}"
            "table{border-collapse:collapse;font-size:13px}"
            "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
            "td.number{text-align:right;font-variant-numeric:tabular-nums}"
            "tr.leak td{background:#fde8e8}tr.growing td{background:#fdeee0}tr.plateau td{background:#fdf6e3}"
            "p.rule{color:#555;font-size:13px;max-width:900px}</style>\n</head>\n<body>\n"
         << "<h1>" << escaped_markup(title) << "</h1>\n";
    // The SVG's own XML declaration is not allowed inside HTML.
    const std::size_t svg_start = chart_svg.find("<svg");
    html << chart_svg.substr(svg_start == std::string::npos ? 0 : svg_start) << '\n';
    html << "<h2>Suspects</h2>\n<p class=\"rule\">" << escaped_markup(series_summary(series, ranking))
         << "</p>\n<table>\n<tr>";
    for (const char* column : kSuspectColumns) html << "<th>" << column << "</th>";
    html << "</tr>\n";
    for (const Suspect& suspect : ranking.suspects) {
        const auto cells = suspect_cells(suspect);
        html << "<tr class=\"" << trend_name(suspect.trend) << "\">" << cell(cells.front());
        // Every column between the class and the site is a number.
        for (std::size_t column = 1; column + 1 < cells.size(); ++column)
            html << "<td class=\"number\">" << escaped_markup(cells[column]) << "</td>";
        html << cell(cells.back()) << "</tr>\n";
    }
    html << "</table>\n";
    if (const std::string note = memory_note(series); !note.empty()) html << "<p>" << escaped_markup(note) << "</p>\n";
    html << "<p class=\"rule\">" << escaped_markup(classification_rules()) << "</p>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace leakwrap
