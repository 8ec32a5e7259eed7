// What the Ruby tests share on top of the e2e harness: where ruby, puma, the extensions and the
// Ruby sources are, a puma under the preload and a client that sends it requests, lines of Ruby
// sources found by what they say, and report rows selected by Ruby location or by the extension
// function that allocated.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace leakwrap::e2e::ruby {

namespace paths {
extern const std::string ruby;                       // empty when ruby is not installed
extern const std::string puma;                       // empty when puma is not installed
extern const std::string extension_dir;              // where the built extensions are: the RUBYLIB to use
std::string source(std::string_view relative_path);  // a file of the repository, absolute
}  // namespace paths

// The only reason a Ruby test may skip. Everything else it needs (ruby-dev for the extensions,
// puma) is installed by scripts/setup.sh, so its absence fails the test instead.
#define LEAKWRAP_SKIP_WITHOUT_RUBY()                                                \
    do {                                                                            \
        if (::leakwrap::e2e::ruby::paths::ruby.empty())                             \
            GTEST_SKIP() << "ruby is not installed (scripts/setup.sh installs it)"; \
    } while (false)

// The environment for a Ruby program under the preload, with the built extensions loadable and
// stacks cut to their two innermost frames. A Ruby process makes tens of thousands of sites, and
// at the default depth of 16 their JSON report takes ~4 KB a site (300 MB for a puma worker);
// the tests look no further than the allocating function, which is frame 0, or frame 1 under
// ruby_xmalloc.
Environment profiled_with_extensions();

// puma under the preload (profiled_with_extensions), listening on a loopback port the kernel
// picks: `puma --bind tcp://127.0.0.1:0 [--workers N] arguments…`, the rackup file last among
// the arguments. Ready once puma and every worker have booted.
class Puma {
public:
    explicit Puma(const std::vector<std::string>& arguments, int workers = 0);
    ~Puma();
    Puma(const Puma&) = delete;
    Puma& operator=(const Puma&) = delete;

    pid_t pid() const { return target_.pid(); }
    const std::string& url() const { return url_; }
    // The workers of a cluster, from the kernel: the children of the master.
    std::vector<pid_t> worker_pids() const;
    // SIGINT is puma's clean stop (SIGTERM re-raises itself and ends the process by the signal).
    int stop();

private:
    Target target_;
    std::string url_;
    bool stopped_ = false;
};

// Exactly `count` GET requests, each on its own connection, each answered 200; from a client
// that runs without the preload.
void send_requests(const std::string& url, long long count);

// The 1-based number of the one line of `file` that contains `text`; throws unless exactly one does.
int line_containing(const std::string& file, std::string_view text);

// True when a report row carries exactly this Ruby location.
bool at_ruby_line(const nlohmann::json& row, const std::string& file, int line);
// Whether a row has no Ruby location at all.
bool without_ruby_location(const nlohmann::json& row);

// The counters of a row, and their sum over all rows at one Ruby location.
Counters counters_of(const nlohmann::json& row);
Counters counters_at_ruby_line(const nlohmann::json& report, const std::string& file, int line);

// The rows whose innermost frame in `module` (a file name such as "markdown_renderer.so") is
// the function `function`: the allocations that function made, whoever it called to allocate.
std::vector<nlohmann::json> rows_allocated_by(const nlohmann::json& report, std::string_view module,
                                              std::string_view function);
Counters sum_of(const std::vector<nlohmann::json>& rows);

}  // namespace leakwrap::e2e::ruby
