#include "ruby_support.h"

#include <fstream>
#include <stdexcept>

namespace leakwrap::e2e::ruby {

namespace paths {
const std::string ruby = LEAKWRAP_RUBY;
const std::string puma = LEAKWRAP_PUMA;
const std::string extension_dir = LEAKWRAP_RUBY_EXTENSION_DIR;
std::string source(std::string_view relative_path) {
    return std::string(LEAKWRAP_SOURCE_DIR) + "/" + std::string(relative_path);
}
}  // namespace paths

Environment profiled_with_extensions() {
    return Environment::profiled().set("RUBYLIB", paths::extension_dir).set("LEAKWRAP_DEPTH", "2");
}

int line_containing(const std::string& file, std::string_view text) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file);
    int found = 0;
    int number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.find(text) == std::string::npos) continue;
        if (found != 0) throw std::runtime_error(file + ": more than one line contains " + std::string(text));
        found = number;
    }
    if (found == 0) throw std::runtime_error(file + ": no line contains " + std::string(text));
    return found;
}

bool at_ruby_line(const nlohmann::json& row, const std::string& file, int line) {
    const auto& ruby = row.at("ruby");
    return ruby.is_object() && ruby.at("file") == file && ruby.at("line") == line;
}

bool without_ruby_location(const nlohmann::json& row) {
    return row.at("ruby").is_null();
}

Counters counters_of(const nlohmann::json& row) {
    return {row.at("live_blocks").get<long long>(), row.at("live_bytes").get<long long>(),
            row.at("allocs").get<long long>(), row.at("frees").get<long long>()};
}

Counters sum_of(const std::vector<nlohmann::json>& rows) {
    Counters sum;
    for (const auto& row : rows) {
        const Counters counters = counters_of(row);
        sum.live_blocks += counters.live_blocks;
        sum.live_bytes += counters.live_bytes;
        sum.allocs += counters.allocs;
        sum.frees += counters.frees;
    }
    return sum;
}

Counters counters_at_ruby_line(const nlohmann::json& report, const std::string& file, int line) {
    std::vector<nlohmann::json> rows;
    for (const auto& row : report.at("sites"))
        if (at_ruby_line(row, file, line)) rows.push_back(row);
    return sum_of(rows);
}

std::vector<nlohmann::json> rows_allocated_by(const nlohmann::json& report, std::string_view module,
                                              std::string_view function) {
    std::vector<nlohmann::json> rows;
    for (const auto& row : report.at("sites")) {
        for (const auto& frame : row.at("frames")) {
            const auto& frame_module = frame.at("module");
            if (!frame_module.is_string() || !frame_module.get<std::string_view>().ends_with(module)) continue;
            if (frame.at("function") == function) rows.push_back(row);
            break;
        }
    }
    return rows;
}

}  // namespace leakwrap::e2e::ruby
