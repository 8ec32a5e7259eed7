#include "report.h"

namespace leakwrap {
namespace {

// RFC 4180: a field with a separator, quote or line break is quoted, its quotes doubled.
std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

std::string function_name(const ResolvedFrame& frame) { return frame.function.value_or("??"); }

}  // namespace

void write_csv_report(std::ostream& out, const ReportInput& input) {
    out << "rank,id,live_bytes,live_blocks,allocs,frees,alloc_bytes,free_bytes,"
           "function,location,module,stack\n";
    const auto ranked = ranked_sites(input.snapshot, input.options);
    for (std::size_t rank = 0; rank < ranked.size(); ++rank) {
        const Site& site = *ranked[rank];
        std::string stack;
        // The innermost frame, malloc's caller, stands for the site in the single-value columns.
        std::string function, location, module;
        for (std::size_t i = 0; i < site.frames.size(); ++i) {
            const auto& frame = input.symbolizer.resolve(site.frames[i], site.module_generation);
            if (i == 0) {
                function = function_name(frame);
                location = source_location(frame);
                module = frame.module.value_or("");
            } else {
                stack += ';';
            }
            stack += function_name(frame);
        }
        if (site.overflow) function = "[overflow site]";
        out << rank + 1 << ',' << site.id << ',' << site.live_bytes << ',' << site.live_blocks
            << ',' << site.allocs << ',' << site.frees << ',' << site.alloc_bytes << ','
            << site.free_bytes << ',' << csv_field(function) << ',' << csv_field(location) << ','
            << csv_field(module) << ',' << csv_field(stack) << '\n';
    }
}

}  // namespace leakwrap
