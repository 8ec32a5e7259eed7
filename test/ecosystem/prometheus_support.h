// Debian's Prometheus, its node_exporter and promtool, run for real on loopback: what the metrics
// outputs are checked against. Each server listens on a port of 127.0.0.1 that was free a moment
// before, keeps its files in the test's directory and is killed when the test ends.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"

namespace leakwrap::ecosystem {

// Whether prometheus, prometheus-node-exporter and promtool are there (scripts/setup.sh installs
// them).
bool have_prometheus();

// `promtool check metrics` of the text: exit code 0 when Prometheus parses it and its linter
// finds nothing (HELP everywhere, counters named _total, ...).
e2e::Completed promtool_check_metrics(const std::string& exposition, const std::filesystem::path& scratch);

struct HttpAnswer {
    int status = 0;  // 0: no answer at all
    std::string content_type;
    std::string body;
};

// GET http://127.0.0.1:PORT/PATH with the given headers.
HttpAnswer http_get(int port, const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers = {});

// "127.0.0.1:9464" -> 9464, from a line such as serve's "serving on http://127.0.0.1:9464/ ...".
int port_in(const std::string& line);

// node_exporter with only its textfile collector, reading DIR.
class NodeExporter {
public:
    explicit NodeExporter(const std::filesystem::path& textfile_directory);
    int port() const { return port_; }

private:
    int port_;
    std::unique_ptr<e2e::Target> process_;
};

// A Prometheus that scrapes the targets ("127.0.0.1:PORT") every `interval`, which is also how
// long a scrape may take, in its own configuration and data directory under `scratch`.
class Prometheus {
public:
    Prometheus(const std::vector<std::string>& targets, const std::filesystem::path& scratch,
               std::chrono::seconds interval = std::chrono::seconds(1));

    // The result of an instant query (/api/v1/query) once it holds a series, asked again and
    // again until `timeout`; throws with the last answer when it never does.
    nlohmann::json query_until_found(const std::string& promql,
                                     std::chrono::seconds timeout = std::chrono::seconds(60));
    // /api/v1/metadata of one metric: [{"type", "help", "unit"}], empty if Prometheus has none.
    nlohmann::json metadata(const std::string& metric);

private:
    int port_;
    std::unique_ptr<e2e::Target> process_;
};

}  // namespace leakwrap::ecosystem
