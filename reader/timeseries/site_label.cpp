#include "site_label.h"

#include "printable_text.h"
#include "report_labels.h"

#include <filesystem>

namespace leakwrap {
namespace {

using nlohmann::json;

std::string string_or_empty(const json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// "file.cpp:42", "file.cpp", or "".
std::string short_source(const json& frame) {
    const std::string file = string_or_empty(frame, "file");
    if (file.empty()) return "";
    const auto line = frame.find("line");
    const bool has_line = line != frame.end() && line->is_number_integer();
    return has_line ? file_name(file) + ":" + std::to_string(line->get<int64_t>()) : file_name(file);
}

std::string frame_label(const json& frame) {
    const std::string function = string_or_empty(frame, "function");
    const std::string source = short_source(frame);
    const std::string module = file_name(string_or_empty(frame, "module"));
    const std::string name = function.empty() ? string_or_empty(frame, "addr") : function;
    if (!source.empty()) return name + " (" + source + ")";
    if (!module.empty()) return name + " (" + module + ")";
    return name;
}

std::string ruby_location(const json& site) {
    const auto ruby = site.find("ruby");
    if (ruby == site.end() || !ruby->is_object()) return "";
    return string_or_empty(*ruby, "file") + ":" + std::to_string(ruby->value("line", uint64_t{0}));
}

}  // namespace

std::string site_label(const json& site) {
    if (site.value("overflow", false)) return "[overflow]";
    if (const std::string ruby = ruby_location(site); !ruby.empty()) return "ruby " + printable(ruby);
    const json frames = site.value("frames", json::array());
    if (frames.empty()) return "(no stack)";
    const auto named =
        innermost_frame_outside_runtimes(frames, [](const json& frame) { return string_or_empty(frame, "module"); });
    return printable(frame_label(named != frames.end() ? *named : frames.front()));
}

std::string site_stack_key(const json& site) {
    if (site.value("overflow", false)) return "[overflow]";
    // The whole Ruby backtrace: two rows may share their innermost Ruby line and native frames.
    std::string key;
    for (const json& frame : site.value("ruby_frames", json::array()))
        key += string_or_empty(frame, "file") + ":" + std::to_string(frame.value("line", uint64_t{0})) + "|";
    if (key.empty()) key = ruby_location(site);
    for (const json& frame : site.value("frames", json::array())) {
        const std::string function = string_or_empty(frame, "function");
        // Without a function name, the offset in the module still names the code exactly.
        key += ";" + (function.empty()
                          ? file_name(string_or_empty(frame, "module")) + "+" + string_or_empty(frame, "module_offset")
                          : function);
        key += "@" + short_source(frame);
    }
    return key;
}

}  // namespace leakwrap
