// The real pprof client, `go tool pprof -top`, run offline, and the rows it prints.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"

namespace leakwrap::ecosystem {

struct PprofTopRow {
    unsigned long long flat_bytes = 0;
    unsigned long long cumulative_bytes = 0;
    std::string function;
};

struct PprofTop {
    std::string sample_type;             // "Type: live_space": the one pprof chose
    unsigned long long total_bytes = 0;  // "… of N total"
    std::vector<PprofTopRow> rows;       // by flat bytes, largest first
};

// Whether go is there (scripts/setup.sh installs golang-go).
bool have_go();

// `go tool pprof -top -unit=B [more_options] SOURCE` (a file or a URL), with HOME, GOCACHE and
// GOPATH in `scratch` and GOPROXY=off, so that nothing is fetched or left outside it. No
// -sample_index: what a user sees first is the profile's default sample type.
e2e::Completed go_pprof_top(const std::string& source, const std::filesystem::path& scratch,
                            const std::vector<std::string>& more_options = {});

// `go tool pprof OPTIONS SOURCE` run the same way, for another report than -top.
e2e::Completed go_pprof(const std::vector<std::string>& options, const std::string& source,
                        const std::filesystem::path& scratch);

// One sample of `go tool pprof -traces`: its value as printed ("336B") and its frames,
// innermost first, each as printed ("make_buffer /src/inl.c:5 (inline)" with -lines).
struct PprofTrace {
    std::string value;
    std::vector<std::string> frames;
};

std::vector<PprofTrace> parse_pprof_traces(const std::string& output);

// True when go failed for want of the network, which this environment may not have.
bool wants_network(const e2e::Completed& pprof);

PprofTop parse_pprof_top(const std::string& output);

}  // namespace leakwrap::ecosystem
