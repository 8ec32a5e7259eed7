// The outputs of `suspects`: a table for people (text, and the HTML page of `plot`) and a JSON
// object for scripts.
#pragma once

#include "series.h"
#include "suspects.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace leakwrap {

// The columns of the table, and one suspect's cells, formatted for people; the site comes last,
// its C++ name shortened (short_site_label) unless full_names.
inline constexpr std::array<const char*, 8> kSuspectColumns = {"CLASS",    "GROWTH/M", "PER HOUR", "R2",
                                                               "RETAINED", "FIRST",    "LAST",     "SITE"};
std::array<std::string, kSuspectColumns.size()> suspect_cells(const Suspect& suspect, bool full_names = false);

// "12 samples of pid 42 over 0:02.4; the process made 1.2 M allocations"
std::string series_summary(const std::vector<Sample>& series, const SuspectRanking& ranking);

// What became of the process's RSS next to the tracked live bytes, and whether that growth lies
// outside every call site; "" for a series without RSS.
std::string memory_note(const std::vector<Sample>& series);

// The first `top` suspects (0: all) with their evidence, and what the classes mean.
void write_suspects_text(std::ostream& out, const std::vector<Sample>& series, const SuspectRanking& ranking,
                         std::size_t top, bool full_names = false);

// {"pid", "samples", "seconds", "process_allocs", "memory": {"rss_growth_bytes",
// "rss_anon_growth_bytes", "segment_growth_bytes", "tracked_live_growth_bytes", "untracked",
// "churning_classes": [{"class", "limit", "allocs", "frees"}]} | null, "suspects": [{"id", "label", "class",
// "growth_bytes_per_million_allocs", "recent_growth_bytes_per_million_allocs",
// "growth_bytes_per_hour", "r_squared", "allocs", "frees", "retained_share",
// "gives_back", "first_live_bytes", "last_live_bytes"}]}
nlohmann::json suspects_json(const std::vector<Sample>& series, const SuspectRanking& ranking, std::size_t top);

}  // namespace leakwrap
