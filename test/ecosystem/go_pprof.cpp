#include "go_pprof.h"

#include <regex>
#include <sstream>

namespace leakwrap::ecosystem {

bool have_go() { return !std::string(LEAKWRAP_GO).empty(); }

e2e::Completed go_pprof_top(const std::string& source, const std::filesystem::path& scratch,
                            const std::vector<std::string>& more_options) {
    std::vector<std::string> options = {"-top", "-unit=B"};
    options.insert(options.end(), more_options.begin(), more_options.end());
    return go_pprof(options, source, scratch);
}

e2e::Completed go_pprof(const std::vector<std::string>& options, const std::string& source,
                        const std::filesystem::path& scratch) {
    const auto environment = e2e::Environment::bare()
                                 .set("HOME", scratch.string())
                                 .set("GOCACHE", (scratch / "cache").string())
                                 .set("GOPATH", (scratch / "path").string())
                                 .set("GOFLAGS", "-mod=mod")
                                 .set("GOPROXY", "off");
    std::vector<std::string> argv = {LEAKWRAP_GO, "tool", "pprof"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(source);
    return e2e::run(argv, environment);
}

bool wants_network(const e2e::Completed& pprof) {
    return pprof.exit_code != 0 &&
           (pprof.err.find("dial tcp") != std::string::npos || pprof.err.find("GOPROXY") != std::string::npos);
}

PprofTop parse_pprof_top(const std::string& output) {
    // "Showing nodes accounting for 53728B, 100% of 53728B total", then rows like
    // "   16384B 30.49% 30.49%    16384B 30.49%  leak_pvalloc".
    static const std::regex type(R"(^Type: (\S+)$)");
    static const std::regex total(R"(Showing nodes accounting for \d+B, [\d.]+% of (\d+)B total)");
    // A zero prints without its unit.
    static const std::regex row(R"(^\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(.+)$)");
    PprofTop top;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        std::smatch match;
        if (std::regex_match(line, match, type))
            top.sample_type = match[1];
        else if (std::regex_search(line, match, total))
            top.total_bytes = std::stoull(match[1]);
        else if (std::regex_match(line, match, row))
            top.rows.push_back({std::stoull(match[1]), std::stoull(match[2]), match[3]});
    }
    return top;
}

std::vector<PprofTrace> parse_pprof_traces(const std::string& output) {
    // After the header, samples separated by "-----------+------…":
    //       site:  89                                        (a label)
    //       336B   make_buffer /src/inline_leak.cpp:23 (inline)
    //              handle /src/inline_leak.cpp:42
    static const std::regex separator(R"(^-+\+-+$)");
    static const std::regex label(R"(^\s+\S+:\s.*$)");
    static const std::regex first_frame(R"(^\s+(\S+)   (\S.*)$)");
    static const std::regex frame(R"(^\s+(\S.*)$)");
    std::vector<PprofTrace> traces;
    bool in_sample = false;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        std::smatch match;
        if (std::regex_match(line, separator)) {
            traces.emplace_back();
            in_sample = true;
        } else if (!in_sample || std::regex_match(line, label)) {
            continue;
        } else if (traces.back().value.empty() && std::regex_match(line, match, first_frame)) {
            traces.back().value = match[1];
            traces.back().frames.push_back(match[2]);
        } else if (std::regex_match(line, match, frame)) {
            traces.back().frames.push_back(match[1]);
        }
    }
    // The last separator closes the last sample.
    if (!traces.empty() && traces.back().frames.empty()) traces.pop_back();
    return traces;
}

}  // namespace leakwrap::ecosystem
