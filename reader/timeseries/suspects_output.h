// The two outputs of `suspects`: a table for people and a JSON object for scripts.
#pragma once

#include "series.h"
#include "suspects.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <ostream>
#include <vector>

namespace leakwrap {

// The first `top` suspects (0: all) with their evidence, and what the classes mean.
void write_suspects_text(std::ostream& out, const std::vector<Sample>& series,
                         const std::vector<Suspect>& suspects, std::size_t top);

// {"pid", "samples", "seconds", "suspects": [{"id", "label", "class", "slope_bytes_per_hour",
// "r_squared", "rising_share", "recent_slope_bytes_per_hour", "first_live_bytes",
// "last_live_bytes"}]}
nlohmann::json suspects_json(const std::vector<Sample>& series,
                             const std::vector<Suspect>& suspects, std::size_t top);

}  // namespace leakwrap
