#include "libc_lines_option.h"
#include "profile_server.h"
#include "quiet_validator.h"
#include "subcommands.h"

#include <climits>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace leakwrap {
namespace {

struct ServeCommandLine {
    std::string listen = kDefaultListenAddress;
    int64_t top = 20;
    bool allow_remote = false;
    bool all_users = false;
    SymbolizerOptions symbolizer;
};

// CLI11 validators return an error message, empty when the value is fine.
std::string listen_address_error(const std::string& text) {
    try {
        parse_listen_address(text);
        return "";
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
}

}  // namespace

Subcommand add_serve_subcommand(CLI::App& app) {
    auto line = std::make_shared<ServeCommandLine>();
    CLI::App* serve =
        app.add_subcommand("serve",
                           "Serve the segments you may read over HTTP, read-only, until Ctrl-C or SIGTERM: GET "
                           "/metrics (every live process; OpenMetrics if the Accept header asks for it, else the "
                           "Prometheus text format), GET /debug/pprof/heap?pid=N[&children=1] (gzipped pprof, for go "
                           "tool pprof, Parca, Pyroscope; children=1 merges the live descendants), GET /processes "
                           "(JSON list of the segments)");
    serve
        ->add_option("--listen", line->listen,
                     "Address and port to listen on, ADDR:PORT with a numeric address; port 0 "
                     "lets the kernel pick one. An address that is not loopback needs "
                     "--allow-remote (default: " +
                         std::string(kDefaultListenAddress) + ")")
        ->type_name("ADDR:PORT")
        ->check(quiet(CLI::Validator(listen_address_error, "ADDR:PORT")));
    serve
        ->add_option("--top", line->top,
                     "Site rows per process in /metrics, ranked by live bytes; 0 gives all "
                     "(default: 20)")
        ->check(quiet(CLI::Range(int64_t{0}, int64_t{INT_MAX})));
    serve->add_flag("--allow-remote", line->allow_remote,
                    "Listen on an address that is not loopback: whoever reaches it can read the heap "
                    "profiles, executables and command lines of every process whose segment you may "
                    "read (default: off)");
    serve->add_flag("--all-users", line->all_users,
                    "Serve every client every segment this user may read, whoever the client is; "
                    "by default a loopback client gets only its own user's segments (root's: all) "
                    "and any other client none, since the answers expose command lines, "
                    "executables and stacks (default: off)");
    add_libc_lines_flag(*serve, line->symbolizer);
    serve->parse_complete_callback([line] {
        if (!parse_listen_address(line->listen).loopback && !line->allow_remote)
            throw CLI::ValidationError("--listen", line->listen +
                                                       " is not a loopback address: give --allow-remote to "
                                                       "serve heap profiles, executables and command lines "
                                                       "to whoever reaches it");
    });

    return {serve, [line] {
                ServeOptions options;
                options.listen = parse_listen_address(line->listen);
                options.top = static_cast<std::size_t>(line->top);
                options.symbolizer = line->symbolizer;
                options.all_users = line->all_users;
                if (!options.listen.loopback)
                    std::cerr << "leakwrap-report: warning: listening on " << options.listen.text()
                              << ", not a loopback address: whoever reaches it can read the heap "
                                 "profiles, executables and command lines of every process whose "
                                 "segment you may read\n";
                return serve_profiles(options);
            }};
}

}  // namespace leakwrap
