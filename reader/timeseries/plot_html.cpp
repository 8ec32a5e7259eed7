#include "plot_html.h"

#include "change_units.h"
#include "plot_svg.h"
#include "report_labels.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace leakwrap {
namespace {

std::string fixed(double value, int decimals) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
    return text;
}

std::string cell(const std::string& text) { return "<td>" + escaped_markup(text) + "</td>"; }

}  // namespace

std::string html_report(const std::vector<Sample>& series, const std::string& chart_svg,
                        const std::vector<Suspect>& suspects) {
    const std::string title = "leakwrap: pid " + std::to_string(series.front().pid);
    std::ostringstream html;
    html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
         << escaped_markup(title) << "</title>\n"
         << "<style>body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:24px;color:#222}"
            "table{border-collapse:collapse;font-size:13px}"
            "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
            "td.number{text-align:right;font-variant-numeric:tabular-nums}"
            "tr.leak td{background:#fde8e8}tr.plateau td{background:#fdf6e3}"
            "p.rule{color:#555;font-size:13px;max-width:900px}</style>\n</head>\n<body>\n"
         << "<h1>" << escaped_markup(title) << "</h1>\n";
    // The SVG's own XML declaration is not allowed inside HTML.
    const std::size_t svg_start = chart_svg.find("<svg");
    html << chart_svg.substr(svg_start == std::string::npos ? 0 : svg_start) << '\n';
    html << "<h2>Suspects</h2>\n<table>\n<tr><th>class</th><th>growth</th><th>R²</th>"
            "<th>rising</th><th>first</th><th>last</th><th>site</th></tr>\n";
    for (const Suspect& suspect : suspects) {
        const std::string number_cell = "<td class=\"number\">";
        html << "<tr class=\"" << trend_name(suspect.trend) << "\">"
             << cell(std::string(trend_name(suspect.trend))) << number_cell
             << escaped_markup(bytes_per_hour(suspect.slope_bytes_per_hour)) << "</td>"
             << number_cell << fixed(suspect.r_squared, 2) << "</td>" << number_cell
             << fixed(100 * suspect.rising_share, 0) << "%</td>" << number_cell
             << escaped_markup(human_bytes(static_cast<uint64_t>(std::llround(suspect.first_live_bytes))))
             << "</td>" << number_cell
             << escaped_markup(human_bytes(static_cast<uint64_t>(std::llround(suspect.last_live_bytes))))
             << "</td>" << cell(suspect.label + "  [id " + std::to_string(suspect.id) + "]")
             << "</tr>\n";
    }
    html << "</table>\n<p class=\"rule\">growth: least-squares slope of live bytes; R²: how well "
            "that line fits; rising: steps that did not go down. leak: growth &gt; 0, R² ≥ "
         << kLeakMinRSquared << ", rising ≥ " << 100 * kLeakMinRisingShare
         << "%, and the last third of the series still grows at ≥ " << 100 * kStillGrowingShare
         << "% of the growth. plateau: grew, then varied by ≤ " << 100 * kPlateauMaxRecentSpread
         << "% of its range over the last third. churn: rises and falls. flat: never "
            "changed.</p>\n</body>\n</html>\n";
    return html.str();
}

}  // namespace leakwrap
