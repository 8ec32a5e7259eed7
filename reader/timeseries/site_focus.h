// --focus and --ignore in time analysis (suspects, diff): a series keeps no resolved frames, only
// each site's label and stack key (site_label.h), so those are what the patterns are matched
// against — the functions, source files and Ruby lines of the stack, but not the modules of frames
// that have a function.
#pragma once

#include "focus_patterns.h"
#include "series.h"

#include <vector>

namespace leakwrap {

bool keeps_site(const SampleSite& site, const FocusPatterns& patterns);

// Drops from every sample the sites the patterns do not keep; totals and bins stay whole.
void keep_focused_sites(std::vector<Sample>& samples, const FocusPatterns& patterns);

}  // namespace leakwrap
