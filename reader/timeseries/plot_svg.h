// `leakwrap-report plot`: an SVG chart of a series, written directly (it is a few lines, axes and
// a legend; no plotting library). Top panel: live bytes over time of the sites that grew most;
// bottom panel: the size classes whose live bytes changed.
#pragma once

#include "series.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap {

inline constexpr std::size_t kDefaultPlotTop = 5;

// The top `top` sites by growth (last minus first live bytes) and as many changed size classes.
std::string chart_svg(const std::vector<Sample>& series, std::size_t top);

// Text made safe for SVG and HTML: & < > " ' escaped.
std::string escaped_markup(std::string_view text);

}  // namespace leakwrap
