#include "ruby_support.h"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <regex>
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

namespace {
std::vector<std::string> puma_command(const std::vector<std::string>& arguments, int workers) {
    std::vector<std::string> argv{paths::puma, "--bind", "tcp://127.0.0.1:0"};
    if (workers > 0) argv.insert(argv.end(), {"--workers", std::to_string(workers)});
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return argv;
}
}  // namespace

Puma::Puma(const std::vector<std::string>& arguments, int workers)
    : target_(puma_command(arguments, workers), profiled_with_extensions()) {
    const std::vector<std::string> log = target_.wait_ready("Use Ctrl-C to stop", 60s);
    const std::regex listening(R"(Listening on http://127\.0\.0\.1:(\d+))");
    for (const auto& line : log) {
        std::smatch match;
        if (std::regex_search(line, match, listening)) url_ = "http://127.0.0.1:" + match[1].str() + "/";
    }
    if (url_.empty()) throw std::runtime_error("puma did not say where it listens");
    for (int worker = 0; worker < workers; ++worker) target_.wait_ready(") booted in", 60s);
}

Puma::~Puma() {
    if (!stopped_) {
        try {
            stop();
        } catch (const std::exception&) {  // ~Target kills what is left
        }
    }
}

std::vector<pid_t> Puma::worker_pids() const {
    std::ifstream children("/proc/" + std::to_string(pid()) + "/task/" + std::to_string(pid()) + "/children");
    std::vector<pid_t> pids;
    for (pid_t child; children >> child;) pids.push_back(child);
    return pids;
}

int Puma::stop() {
    stopped_ = true;
    kill(pid(), SIGINT);
    return target_.release_and_wait(60s);
}

void send_requests(const std::string& url, long long count) {
    const char* client =
        "url, count = ARGV\n"
        "Integer(count).times do |i|\n"
        "  response = Net::HTTP.get_response(URI(url))\n"
        "  abort \"request #{i}: HTTP #{response.code}\" unless response.code == '200'\n"
        "end\n";
    const Completed sent =
        run({paths::ruby, "-rnet/http", "-e", client, url, std::to_string(count)}, Environment::bare(), {}, 60s);
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
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

bool without_ruby_location(const nlohmann::json& row) { return row.at("ruby").is_null(); }

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
