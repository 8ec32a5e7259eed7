#include "plot_scale.h"

#include "change_units.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>

namespace leakwrap {
namespace {

// About this many ticks on an axis: enough to read values off, few enough to stay legible.
constexpr double kMaxTicks = 6;

// 1, 2 or 5 times a power of ten, the smallest that covers the span in kMaxTicks steps.
double round_step(double span) {
    const double raw = span / kMaxTicks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double multiple : {1.0, 2.0, 5.0})
        if (multiple * power >= raw * (1 - 1e-9)) return multiple * power;
    return 10 * power;
}

Axis axis_with_step(double max_value, double step, const std::function<std::string(double)>& label) {
    Axis axis;
    const int steps = std::max(1, static_cast<int>(std::ceil(max_value / step - 1e-9)));
    for (int i = 0; i <= steps; ++i) axis.ticks.push_back({i * step, label(i * step)});
    axis.high = axis.ticks.back().value;
    return axis;
}

}  // namespace

Axis byte_axis(double max_bytes) {
    constexpr std::array kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    double scale = 1;
    while (unit + 1 < kUnits.size() && max_bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    double step = round_step(std::max(max_bytes, 1.0) / scale);
    if (unit == 0) step = std::max(step, 1.0);  // no tick at a fraction of a byte
    return axis_with_step(max_bytes, step * scale, [&](double bytes) {
        if (bytes == 0) return std::string("0");
        char text[32];
        std::snprintf(text, sizeof(text), "%g %s", bytes / scale, kUnits[unit]);
        return std::string(text);
    });
}

Axis time_axis(double max_seconds) {
    constexpr std::array<double, 21> kClockSteps = {0.1, 0.2, 0.5, 1,    2,    5,    10,    15,    30,    60,   120,
                                                    300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
    const double span = std::max(max_seconds, 0.1);
    double step = kClockSteps.back();
    for (const double candidate : kClockSteps) {
        if (span / candidate <= kMaxTicks + 1) {
            step = candidate;
            break;
        }
    }
    return axis_with_step(span, step, [&](double seconds) { return elapsed_clock(seconds, step < 1); });
}

}  // namespace leakwrap
