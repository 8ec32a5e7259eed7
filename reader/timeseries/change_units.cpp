#include "change_units.h"

#include "report_labels.h"

#include <cmath>
#include <cstdio>

namespace leakwrap {

std::string signed_human_bytes(double bytes) {
    const uint64_t magnitude = static_cast<uint64_t>(std::llround(std::fabs(bytes)));
    return (bytes < 0 && magnitude > 0 ? "-" : "+") + human_bytes(magnitude);
}

std::string bytes_per_hour(double bytes_per_hour) { return signed_human_bytes(bytes_per_hour) + "/h"; }

std::string elapsed_clock(double seconds, bool with_tenths) {
    const double rounded = with_tenths ? std::round(seconds * 10) / 10 : std::round(seconds);
    const auto whole = static_cast<long long>(rounded);
    const long long hours = whole / 3600, minutes = whole / 60 % 60, secs = whole % 60;
    char text[48];
    if (hours > 0)
        std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", hours, minutes, secs);
    else
        std::snprintf(text, sizeof(text), "%lld:%02lld", minutes, secs);
    std::string result = text;
    if (with_tenths) result += "." + std::to_string(static_cast<long long>(std::llround(rounded * 10)) % 10);
    return result;
}

}  // namespace leakwrap
