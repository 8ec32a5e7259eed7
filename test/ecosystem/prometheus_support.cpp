#include "prometheus_support.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

namespace leakwrap::ecosystem {
namespace {

using namespace std::chrono_literals;

int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                       getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    close(fd);
    if (!bound) throw std::runtime_error("cannot find a free port on 127.0.0.1");
    return ntohs(address.sin_port);
}

// Servers take a moment to listen: asks `path` until it answers 200.
void wait_until_answering(int port, const std::string& path, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (http_get(port, path).status != 200) {
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error(std::string(what) + " did not answer on 127.0.0.1:" + std::to_string(port) + path);
        std::this_thread::sleep_for(100ms);
    }
}

nlohmann::json api_data(int port, const std::string& path) {
    const HttpAnswer answer = http_get(port, path);
    if (answer.status != 200)
        throw std::runtime_error("GET " + path + ": " + std::to_string(answer.status) + " " + answer.body);
    const auto document = nlohmann::json::parse(answer.body);
    if (document.value("status", "") != "success") throw std::runtime_error("GET " + path + ": " + answer.body);
    return document.at("data");
}

}  // namespace

bool have_prometheus() {
    return !std::string(LEAKWRAP_PROMETHEUS).empty() && !std::string(LEAKWRAP_NODE_EXPORTER).empty() &&
           !std::string(LEAKWRAP_PROMTOOL).empty();
}

e2e::Completed promtool_check_metrics(const std::string& exposition, const std::filesystem::path& scratch) {
    const auto file = scratch / "exposition.txt";
    std::ofstream(file, std::ios::binary) << exposition;
    return e2e::run({"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", LEAKWRAP_PROMTOOL, file.string()},
                    e2e::Environment::bare());
}

HttpAnswer http_get(int port, const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(5);
    client.set_read_timeout(30);
    const auto result = client.Get(path, httplib::Headers(headers.begin(), headers.end()));
    if (!result) return {};
    return {result->status, result->get_header_value("Content-Type"), result->body};
}

int port_in(const std::string& line) {
    static const std::regex address(R"(127\.0\.0\.1:(\d+))");
    std::smatch match;
    if (!std::regex_search(line, match, address)) throw std::runtime_error("no port in: " + line);
    return std::stoi(match[1]);
}

NodeExporter::NodeExporter(const std::filesystem::path& textfile_directory)
    : port_(free_loopback_port()),
      process_(std::make_unique<e2e::Target>(
          std::vector<std::string>{LEAKWRAP_NODE_EXPORTER, "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--collector.disable-defaults", "--collector.textfile",
                                   "--collector.textfile.directory=" + textfile_directory.string(),
                                   "--log.level=error"},
          e2e::Environment::bare())) {
    wait_until_answering(port_, "/metrics", "node_exporter");
}

Prometheus::Prometheus(const std::vector<std::string>& targets, const std::filesystem::path& scratch,
                       std::chrono::seconds interval)
    : port_(free_loopback_port()) {
    const auto configuration = scratch / "prometheus.yml";
    std::ofstream yaml(configuration);
    yaml << "global:\n  scrape_interval: " << interval.count() << "s\n  scrape_timeout: " << interval.count() << "s\n"
         << "scrape_configs:\n  - job_name: leakwrap\n    static_configs:\n      - targets:\n";
    for (const std::string& target : targets) yaml << "          - '" << target << "'\n";
    yaml.close();
    process_ = std::make_unique<e2e::Target>(
        std::vector<std::string>{LEAKWRAP_PROMETHEUS, "--config.file=" + configuration.string(),
                                 "--storage.tsdb.path=" + (scratch / "data").string(),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=error"},
        e2e::Environment::bare());
    wait_until_answering(port_, "/-/ready", "prometheus");
}

nlohmann::json Prometheus::query_until_found(const std::string& promql, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::string path = httplib::append_query_params("/api/v1/query", {{"query", promql}});
    while (true) {
        const nlohmann::json data = api_data(port_, path);
        if (!data.at("result").empty()) return data.at("result");
        if (std::chrono::steady_clock::now() >= deadline) {
            std::string health;
            for (const auto& target : api_data(port_, "/api/v1/targets").at("activeTargets"))
                health += " " + target.value("scrapeUrl", "") + ": " + target.value("health", "") + " " +
                          target.value("lastError", "") + ";";
            throw std::runtime_error("Prometheus found no series for " + promql + " in time; targets:" + health);
        }
        std::this_thread::sleep_for(200ms);
    }
}

nlohmann::json Prometheus::metadata(const std::string& metric) {
    const nlohmann::json data = api_data(port_, httplib::append_query_params("/api/v1/metadata", {{"metric", metric}}));
    return data.contains(metric) ? data.at(metric) : nlohmann::json::array();
}

}  // namespace leakwrap::ecosystem
