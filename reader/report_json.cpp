#include "report.h"

#include <nlohmann/json.hpp>

namespace leakwrap {
namespace {

using nlohmann::json;

template <class T>
json or_null(const std::optional<T>& value) {
    return value ? json(*value) : json(nullptr);
}

json frame_json(const ResolvedFrame& frame) {
    json result = {
        {"addr", hex_address(frame.address)}, {"function", or_null(frame.function)},
        {"file", or_null(frame.file)},        {"line", or_null(frame.line)},
        {"module", or_null(frame.module)},
    };
    if (frame.module_offset) result["module_offset"] = hex_address(*frame.module_offset);
    if (!frame.note.empty()) result["note"] = frame.note;
    return result;
}

json site_json(const Site& site, Symbolizer& symbolizer) {
    json frames = json::array();
    for (const uint64_t address : site.frames)
        frames.push_back(frame_json(symbolizer.resolve(address, site.module_generation)));
    return {
        {"id", site.id},
        {"overflow", site.overflow},
        {"live_bytes", site.live_bytes},
        {"live_blocks", site.live_blocks},
        {"allocs", site.allocs},
        {"frees", site.frees},
        {"alloc_bytes", site.alloc_bytes},
        {"free_bytes", site.free_bytes},
        {"frames", std::move(frames)},
    };
}

}  // namespace

void write_json_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    const Totals& totals = snapshot.totals;
    json sites = json::array();
    for (const Site* site : ranked_sites(snapshot, input.options))
        sites.push_back(site_json(*site, input.symbolizer));
    const json report = {
        {"pid", snapshot.pid},
        {"parent_pid", snapshot.parent_pid},
        {"exe", snapshot.exe},
        {"command_line", snapshot.command_line},
        {"state", owner_state_name(input.owner)},
        {"totals",
         {
             {"live_bytes", totals.live_bytes},
             {"live_blocks", totals.live_blocks},
             {"allocs", totals.allocs},
             {"frees", totals.frees},
             {"alloc_bytes", totals.alloc_bytes},
             {"free_bytes", totals.free_bytes},
             {"sites", snapshot.sites.size()},
             {"lost_sites", snapshot.lost_sites},
         }},
        {"sites", std::move(sites)},
    };
    // Replace, not throw, on invalid UTF-8: paths and command lines are arbitrary bytes.
    out << report.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace leakwrap
