#include "plot_svg.h"

#include "change_units.h"
#include "plot_scale.h"
#include "report_labels.h"
#include "short_names.h"
#include "series_history.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace leakwrap {
namespace {

// Geometry in SVG user units (pixels when rendered at 100%).
constexpr double kWidth = 960;
constexpr double kPlotLeft = 90;  // room for "1023.5 KiB"
constexpr double kPlotRight = kWidth - 30;
constexpr double kPanelTitleHeight = 34;
constexpr double kPlotHeight = 240;
constexpr double kXAxisHeight = 44;
constexpr double kLegendRowHeight = 18;
constexpr double kPanelGap = 26;
constexpr double kHeaderHeight = 36;
constexpr std::size_t kMaxLabelCharacters = 100;
// Markers help to tell samples apart; beyond this many they would blur into the line.
constexpr std::size_t kMaxSamplesWithMarkers = 80;

// Tableau 10: distinct for people with the common colour-vision deficiencies.
constexpr std::array<const char*, 10> kColours = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

struct ChartLine {
    std::string label;
    std::vector<double> values;  // live bytes, one per sample
};

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", value);
    return text;
}

std::string shortened(const std::string& label) {
    if (label.size() <= kMaxLabelCharacters) return label;
    std::size_t cut = kMaxLabelCharacters;
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xc0) == 0x80) --cut;  // UTF-8
    return label.substr(0, cut) + "…";
}

double growth(const std::vector<double>& values) { return values.back() - values.front(); }

double range(const std::vector<double>& values) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    return *high - *low;
}

std::vector<ChartLine> top_growing_sites(const std::vector<Sample>& series, std::size_t top) {
    std::vector<SiteHistory> sites = site_histories(series);
    std::erase_if(sites, [](const SiteHistory& site) { return growth(site.live_bytes) <= 0; });
    std::stable_sort(sites.begin(), sites.end(), [](const SiteHistory& a, const SiteHistory& b) {
        return growth(a.live_bytes) > growth(b.live_bytes);
    });
    std::vector<ChartLine> lines;
    for (std::size_t i = 0; i < std::min(top, sites.size()); ++i)
        lines.push_back({short_site_label(sites[i].label), std::move(sites[i].live_bytes)});
    return lines;
}

std::vector<ChartLine> changed_size_classes(const std::vector<Sample>& series, std::size_t top) {
    std::vector<BinHistory> bins = bin_histories(series);
    std::erase_if(bins, [](const BinHistory& bin) { return range(bin.live_bytes) == 0; });
    std::stable_sort(bins.begin(), bins.end(), [](const BinHistory& a, const BinHistory& b) {
        return std::fabs(growth(a.live_bytes)) > std::fabs(growth(b.live_bytes));
    });
    std::vector<ChartLine> lines;
    for (std::size_t i = 0; i < std::min(top, bins.size()); ++i)
        lines.push_back({"size class " + size_class_label(bins[i].size_class), std::move(bins[i].live_bytes)});
    return lines;
}

// One panel: title, axes with grid lines, a line per series and the legend below. Returns the
// height it took.
double draw_panel(std::ostream& svg, double top, const std::string& title, const std::string& empty_note,
                  const std::string& y_label, const std::vector<double>& seconds, const std::vector<ChartLine>& lines) {
    double max_bytes = 0;
    for (const ChartLine& line : lines)
        max_bytes = std::max(max_bytes, *std::max_element(line.values.begin(), line.values.end()));
    const Axis x_axis = time_axis(seconds.back());
    const Axis y_axis = byte_axis(max_bytes);
    const double plot_top = top + kPanelTitleHeight;
    const double plot_bottom = plot_top + kPlotHeight;
    const auto x_of = [&](double s) { return kPlotLeft + (kPlotRight - kPlotLeft) * s / x_axis.high; };
    const auto y_of = [&](double bytes) { return plot_bottom - kPlotHeight * bytes / y_axis.high; };

    svg << "<text x=\"" << kPlotLeft << "\" y=\"" << number(top + 20) << "\" class=\"title\">" << escaped_markup(title)
        << "</text>\n";
    for (const AxisTick& tick : y_axis.ticks) {
        const std::string y = number(y_of(tick.value));
        svg << "<line x1=\"" << kPlotLeft << "\" x2=\"" << kPlotRight << "\" y1=\"" << y << "\" y2=\"" << y
            << "\" class=\"grid\"/>\n"
            << "<text x=\"" << kPlotLeft - 8 << "\" y=\"" << number(y_of(tick.value) + 4)
            << "\" class=\"tick\" text-anchor=\"end\">" << escaped_markup(tick.label) << "</text>\n";
    }
    for (const AxisTick& tick : x_axis.ticks) {
        const std::string x = number(x_of(tick.value));
        svg << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << plot_bottom << "\" y2=\"" << plot_bottom + 5
            << "\" class=\"axis\"/>\n"
            << "<text x=\"" << x << "\" y=\"" << plot_bottom + 20 << "\" class=\"tick\" text-anchor=\"middle\">"
            << escaped_markup(tick.label) << "</text>\n";
    }
    svg << "<line x1=\"" << kPlotLeft << "\" x2=\"" << kPlotRight << "\" y1=\"" << plot_bottom << "\" y2=\""
        << plot_bottom << "\" class=\"axis\"/>\n"
        << "<line x1=\"" << kPlotLeft << "\" x2=\"" << kPlotLeft << "\" y1=\"" << plot_top << "\" y2=\"" << plot_bottom
        << "\" class=\"axis\"/>\n"
        << "<text x=\"" << (kPlotLeft + kPlotRight) / 2 << "\" y=\"" << plot_bottom + 38
        << "\" class=\"tick\" text-anchor=\"middle\">time since the first sample</text>\n"
        << "<text transform=\"translate(16 " << number((plot_top + plot_bottom) / 2)
        << ") rotate(-90)\" class=\"tick\" text-anchor=\"middle\">" << escaped_markup(y_label) << "</text>\n";
    if (lines.empty())
        svg << "<text x=\"" << (kPlotLeft + kPlotRight) / 2 << "\" y=\"" << number((plot_top + plot_bottom) / 2)
            << "\" class=\"note\" text-anchor=\"middle\">" << escaped_markup(empty_note) << "</text>\n";

    double legend_y = plot_bottom + kXAxisHeight;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const char* colour = kColours[i % kColours.size()];
        svg << "<polyline class=\"series\" stroke=\"" << colour << "\" points=\"";
        for (std::size_t k = 0; k < seconds.size(); ++k)
            svg << number(x_of(seconds[k])) << ',' << number(y_of(lines[i].values[k])) << ' ';
        svg << "\"/>\n";
        if (seconds.size() <= kMaxSamplesWithMarkers)
            for (std::size_t k = 0; k < seconds.size(); ++k)
                svg << "<circle cx=\"" << number(x_of(seconds[k])) << "\" cy=\"" << number(y_of(lines[i].values[k]))
                    << "\" r=\"2.5\" fill=\"" << colour << "\"/>\n";
        legend_y += kLegendRowHeight;
        svg << "<rect x=\"" << kPlotLeft << "\" y=\"" << number(legend_y - 10) << "\" width=\"14\" height=\"4\" fill=\""
            << colour << "\"/>\n"
            << "<text x=\"" << kPlotLeft + 22 << "\" y=\"" << number(legend_y - 4) << "\" class=\"legend\">"
            << escaped_markup(shortened(lines[i].label)) << "  ("
            << escaped_markup(signed_human_bytes(growth(lines[i].values))) << ")</text>\n";
    }
    return legend_y - top;
}

// The whole process: the live bytes leakwrap tracks, and next to them the RSS as the kernel
// splits it, when every sample has it, so that growth outside the tracked heap shows.
std::vector<ChartLine> process_memory_lines(const std::vector<Sample>& series) {
    const auto values = [&series](auto bytes_of) {
        std::vector<double> points;
        for (const Sample& sample : series) points.push_back(static_cast<double>(bytes_of(sample)));
        return points;
    };
    std::vector<ChartLine> lines;
    const bool with_rss =
        std::all_of(series.begin(), series.end(), [](const Sample& sample) { return sample.memory.has_value(); });
    if (with_rss) {
        lines.push_back({"RSS", values([](const Sample& s) { return s.memory->rss(); })});
        lines.push_back({"RSS anon", values([](const Sample& s) { return s.memory->rss_anon; })});
        // A tree's RSS counts a page its processes share in each; its PSS is what it holds.
        const bool tree_with_pss = std::all_of(series.begin(), series.end(), [](const Sample& sample) {
            return !sample.pids.empty() && sample.memory->pss > 0;
        });
        if (tree_with_pss) lines.push_back({"PSS", values([](const Sample& s) { return s.memory->pss; })});
    }
    lines.push_back({"tracked live bytes", values([](const Sample& s) { return s.totals.live_bytes; })});
    if (with_rss) {
        lines.push_back(
            {"leakwrap's segment (resident)", values([](const Sample& s) { return s.memory->segment_resident; })});
        // A series of a preload before layout 7 has no count: no line of zeros for it.
        if (std::any_of(series.begin(), series.end(), [](const Sample& s) { return s.memory->leakwrap_private > 0; }))
            lines.push_back(
                {"leakwrap's private tables", values([](const Sample& s) { return s.memory->leakwrap_private; })});
    }
    return lines;
}

}  // namespace

std::string escaped_markup(std::string_view text) {
    std::string result;
    for (const char c : text) {
        switch (c) {
            case '&': result += "&amp;"; break;
            case '<': result += "&lt;"; break;
            case '>': result += "&gt;"; break;
            case '"': result += "&quot;"; break;
            case '\'': result += "&#39;"; break;
            default: result += c;
        }
    }
    return result;
}

std::string chart_svg(const std::vector<Sample>& series, std::size_t top) {
    const std::vector<double> seconds = seconds_since_start(series);
    std::ostringstream body;
    double y = kHeaderHeight;
    const std::vector<ChartLine> memory = process_memory_lines(series);
    y += draw_panel(body, y,
                    memory.size() > 1 ? "The process: RSS next to the live bytes leakwrap tracks"
                                      : "The process: tracked live bytes (this series has no RSS)",
                    "", "bytes", seconds, memory);
    y += kPanelGap;
    const std::vector<ChartLine> sites = top_growing_sites(series, top);
    y += draw_panel(body, y,
                    "Live bytes of the " + std::to_string(sites.size()) + (sites.size() == 1 ? " site" : " sites") +
                        " that grew" + (sites.size() == top ? " most" : "") + " (from the first to the last sample)",
                    "no site grew", "live bytes", seconds, sites);
    y += kPanelGap;
    y += draw_panel(body, y, "Live bytes per size class, the classes that changed", "no size class changed",
                    "live bytes", seconds, changed_size_classes(series, top));
    y += kPanelGap;

    std::ostringstream svg;
    svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << number(y)
        << "\" viewBox=\"0 0 " << kWidth << ' ' << number(y) << "\">\n"
        << "<style>text{font-family:'DejaVu Sans',Verdana,sans-serif;fill:#222}"
           ".title{font-size:15px;font-weight:bold}.tick{font-size:12px;fill:#555}"
           ".legend{font-size:12.5px}.note{font-size:14px;fill:#888}"
           ".grid{stroke:#e4e4e4;stroke-width:1}.axis{stroke:#666;stroke-width:1}"
           ".series{fill:none;stroke-width:2.2;stroke-linejoin:round}</style>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << "<text x=\"" << kPlotLeft << "\" y=\"24\" class=\"title\" style=\"font-size:17px\">"
        << escaped_markup("leakwrap: pid " + std::to_string(series.front().pid) + ", " + std::to_string(series.size()) +
                          " samples over " + elapsed_clock(seconds.back(), seconds.back() < 60) + ", live " +
                          human_bytes(series.back().totals.live_bytes) + " (" +
                          signed_human_bytes(static_cast<double>(series.back().totals.live_bytes) -
                                             static_cast<double>(series.front().totals.live_bytes)) +
                          ")")
        << "</text>\n"
        << body.str() << "</svg>\n";
    return svg.str();
}

}  // namespace leakwrap
