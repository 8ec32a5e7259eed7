#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "diagnostics.h"
#include "leakwrap/segment_layout.h"

namespace leakwrap {
namespace {

// Parses a decimal integer in [low, high]; anything else keeps `fallback` and says so.
uint64_t read_number(const char* name, uint64_t fallback, uint64_t low, uint64_t high) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || *text == '-' || value < low || value > high) {
        warn("ignoring %s=%s (expected a whole number from %llu to %llu); using %llu", name, text,
             static_cast<unsigned long long>(low), static_cast<unsigned long long>(high),
             static_cast<unsigned long long>(fallback));
        return fallback;
    }
    return value;
}

bool read_flag(const char* name) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0' || std::strcmp(text, "0") == 0) return false;
    if (std::strcmp(text, "1") == 0) return true;
    warn("ignoring %s=%s (expected 0 or 1); using 0", name, text);
    return false;
}

}  // namespace

Config read_config() {
    Config config;
    config.depth = static_cast<uint32_t>(read_number("LEAKWRAP_DEPTH", config.depth, 1, layout::kMaxDepth));
    config.ruby_depth =
        static_cast<uint32_t>(read_number("LEAKWRAP_RUBY_DEPTH", config.ruby_depth, 0, layout::kMaxRubyDepth));
    config.max_sites = static_cast<uint32_t>(
        read_number("LEAKWRAP_MAX_SITES", config.max_sites, layout::kMinSiteCapacity, layout::kMaxSiteCapacity));
    config.sample_interval = read_number("LEAKWRAP_SAMPLE", config.sample_interval, 0, uint64_t{1} << 40);
    config.keep = read_flag("LEAKWRAP_KEEP");
    config.keep_dead = static_cast<uint32_t>(read_number("LEAKWRAP_KEEP_DEAD", config.keep_dead, 0, kMaxKeepDead));
    config.keep_dead_days =
        static_cast<uint32_t>(read_number("LEAKWRAP_KEEP_DEAD_DAYS", config.keep_dead_days, 0, 36500));
    config.disable = read_flag("LEAKWRAP_DISABLE");
    return config;
}

}  // namespace leakwrap
