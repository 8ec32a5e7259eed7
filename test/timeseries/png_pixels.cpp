#include "png_pixels.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace leakwrap::timeseries {
namespace {

uint32_t big_endian(const std::string& bytes, std::size_t at) {
    uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<uint8_t>(bytes.at(at + i));
    return value;
}

std::string inflated(const std::string& compressed, std::size_t size) {
    std::string out(size, '\0');
    uLongf length = static_cast<uLongf>(size);
    if (uncompress(reinterpret_cast<Bytef*>(out.data()), &length, reinterpret_cast<const Bytef*>(compressed.data()),
                   static_cast<uLong>(compressed.size())) != Z_OK ||
        length != size)
        throw std::runtime_error("PNG image data does not inflate to its size");
    return out;
}

uint8_t paeth(int left, int up, int corner) {
    const int estimate = left + up - corner;
    const int to_left = std::abs(estimate - left), to_up = std::abs(estimate - up),
              to_corner = std::abs(estimate - corner);
    if (to_left <= to_up && to_left <= to_corner) return static_cast<uint8_t>(left);
    return static_cast<uint8_t>(to_up <= to_corner ? up : corner);
}

// Undoes the per-row filters of the PNG specification, section 9, in place.
void unfilter(std::string& data, uint32_t height, std::size_t stride, std::size_t channels) {
    for (uint32_t y = 0; y < height; ++y) {
        auto* row = reinterpret_cast<uint8_t*>(data.data()) + y * (stride + 1);
        const uint8_t filter = row[0];
        uint8_t* line = row + 1;
        const uint8_t* previous = y > 0 ? line - (stride + 1) : nullptr;
        for (std::size_t x = 0; x < stride; ++x) {
            const int left = x >= channels ? line[x - channels] : 0;
            const int up = previous ? previous[x] : 0;
            const int corner = previous && x >= channels ? previous[x - channels] : 0;
            switch (filter) {
                case 0: break;
                case 1: line[x] = static_cast<uint8_t>(line[x] + left); break;
                case 2: line[x] = static_cast<uint8_t>(line[x] + up); break;
                case 3: line[x] = static_cast<uint8_t>(line[x] + (left + up) / 2); break;
                case 4: line[x] = static_cast<uint8_t>(line[x] + paeth(left, up, corner)); break;
                default: throw std::runtime_error("unknown PNG filter " + std::to_string(filter));
            }
        }
    }
}

}  // namespace

PngPixels read_png(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string file{std::istreambuf_iterator<char>(in), {}};
    if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
        throw std::runtime_error(path.string() + " is not a PNG");
    PngPixels png;
    std::size_t channels = 0;
    std::string compressed;
    for (std::size_t at = 8; at + 8 <= file.size();) {
        const uint32_t length = big_endian(file, at);
        const std::string kind = file.substr(at + 4, 4);
        if (kind == "IHDR") {
            png.width = big_endian(file, at + 8);
            png.height = big_endian(file, at + 12);
            const uint8_t depth = static_cast<uint8_t>(file.at(at + 16));
            const uint8_t colour_type = static_cast<uint8_t>(file.at(at + 17));
            const uint8_t interlace = static_cast<uint8_t>(file.at(at + 20));
            if (depth != 8 || (colour_type != 2 && colour_type != 6) || interlace != 0)
                throw std::runtime_error("only 8-bit, non-interlaced RGB(A) PNGs are decoded");
            channels = colour_type == 2 ? 3 : 4;
        } else if (kind == "IDAT") {
            compressed += file.substr(at + 8, length);
        }
        at += 12 + length;
    }
    if (channels == 0) throw std::runtime_error(path.string() + " has no IHDR chunk");
    const std::size_t stride = png.width * channels;
    std::string data = inflated(compressed, png.height * (stride + 1));
    unfilter(data, png.height, stride, channels);
    png.pixels.reserve(std::size_t{png.width} * png.height);
    for (uint32_t y = 0; y < png.height; ++y)
        for (uint32_t x = 0; x < png.width; ++x) {
            const auto* pixel = reinterpret_cast<const uint8_t*>(data.data()) + y * (stride + 1) + 1 + x * channels;
            png.pixels.push_back({pixel[0], pixel[1], pixel[2]});
        }
    return png;
}

}  // namespace leakwrap::timeseries
