// Reads a snapshot file for `diff` — a `--format json` report or one series line — without ever
// holding its document: the object is split into its members as it is read, and "sites" into
// one element at a time. A series line of a Rails process is tens of megabytes on one line, which
// as a document takes several times that and parses slowly; a series line's sites are flat
// objects of numbers and strings, which the scanner here reads itself.
#pragma once

#include "series.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <istream>
#include <string_view>

namespace leakwrap {

// `site` gets each element of "sites" in turn, as sample_site_from_json makes it, none of them
// kept; then `head` the object without its sites and without the "labels" of a line written by
// an earlier version (which repeat the sites' labels). Throws std::runtime_error naming `name`.
void visit_sample_stream(std::istream& in, const std::string& name,
                         const std::function<void(const nlohmann::json& head)>& head,
                         const std::function<void(SampleSite&& site, bool has_stack)>& site);
void visit_sample_file(const std::filesystem::path& path, const std::function<void(const nlohmann::json& head)>& head,
                       const std::function<void(SampleSite&& site, bool has_stack)>& site);

// One element of "sites" from its JSON text: read directly when it is a flat object (a series
// line's site), through nlohmann otherwise (a report's, with frames). Exposed for its tests.
SampleSite sample_site_from_text(std::string_view text, bool& has_stack);

}  // namespace leakwrap
