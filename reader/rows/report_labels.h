// How a frame, a size class or a row reads in one line, the same in every format and in time
// analysis.
#pragma once

#include "report_rows.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leakwrap {

// "0x7f3a12c0"
std::string hex_address(uint64_t address);

// "48.8 MiB"
std::string human_bytes(uint64_t bytes);

// "file:line", "file", or "" when DWARF had nothing.
std::string source_location(const ResolvedFrame& frame);

// "≤320 B", "≤1.25 KiB", "> 1 TiB": size-class limits are exact in binary units.
std::string size_class_label(uint32_t size_class);

// The inclusive upper bound of a class in bytes; nullopt for the last, unbounded one.
std::optional<uint64_t> size_class_limit_bytes(uint32_t size_class);

// "app.rb:12"
std::string ruby_location_text(const RubyLocation& location);

// Whether a module is a runtime whose frames say nothing about a leak: the C and C++ runtimes
// (malloc wrappers such as operator new, strdup, vasprintf) and the Ruby VM (its allocation and
// dispatch frames, which every Ruby line shares). Takes the module's path or file name.
bool is_runtime_module(std::string_view module_path);

// The frame that names a site: the innermost one outside the runtimes, the application's or a C
// extension's function; frames.end() when every frame is in a runtime (or there is none).
// module_of(frame) gives a frame's module path, "" when unknown.
template <typename Frames, typename ModuleOf>
auto innermost_frame_outside_runtimes(const Frames& frames, ModuleOf module_of) {
    return std::find_if(frames.begin(), frames.end(),
                        [&](const auto& frame) { return !is_runtime_module(module_of(frame)); });
}

// Where a row allocates, in a few words: the innermost function (and the Ruby location, if
// any), the Ruby location alone under --by ruby, or "[overflow]". short_names: the function as
// short_function_name gives it, for text.
std::string row_summary(const ReportRow& row, Grouping grouping, Symbolizer& symbolizer, bool short_names = false);

}  // namespace leakwrap
