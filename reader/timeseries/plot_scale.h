// The axes of `plot`: round tick values from zero up, labelled in the units a person reads.
#pragma once

#include <string>
#include <vector>

namespace leakwrap {

struct AxisTick {
    double value;
    std::string label;
};

struct Axis {
    double high = 1;  // the axis runs from 0 to high, the last tick
    std::vector<AxisTick> ticks;
};

// Live bytes: steps of 1, 2 or 5 times a power of ten in the binary unit that fits the largest
// value (B, KiB, MiB, GiB, TiB): "0", "50 KiB", "100 KiB", …
Axis byte_axis(double max_bytes);

// Seconds since the first sample: clock-like steps (1 s, 5 s, 15 s, 1 min, 5 min, 1 h, …, or
// tenths for a series under a few seconds) labelled m:ss or h:mm:ss.
Axis time_axis(double max_seconds);

}  // namespace leakwrap
