// The check of a duration option (watch --interval, top --interval), as CLI11 validators want
// it: an error message, empty when the value is fine.
#pragma once

#include "watch_duration.h"

#include <string>

namespace leakwrap {

inline std::string duration_error(const std::string& text) {
    return parse_duration(text) ? "" : "not a duration like 500ms, 5s, 2m or 1h: " + text;
}

}  // namespace leakwrap
