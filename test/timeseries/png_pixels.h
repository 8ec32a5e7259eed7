// Just enough of a PNG decoder to check what rsvg-convert drew: 8-bit RGB or RGBA, not
// interlaced (what it writes). Tests ask how many colours there are and where.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace leakwrap::timeseries {

struct Rgb {
    uint8_t red, green, blue;
    auto operator<=>(const Rgb&) const = default;
};

struct PngPixels {
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<Rgb> pixels;  // row by row; alpha dropped
};

// Throws std::runtime_error for anything it cannot decode.
PngPixels read_png(const std::filesystem::path& path);

}  // namespace leakwrap::timeseries
