// `leakwrap-report serve`: the segments this user may read, over HTTP, in the conventions that
// Prometheus and continuous-profiling servers (Parca, Pyroscope) pull from, each client given
// only the segments its own user could read with leakwrap-report (unless --all-users):
//   GET /metrics                   every live process, Prometheus text or OpenMetrics by Accept
//   GET /debug/pprof/heap?pid=N    one live process as a gzipped pprof profile (Go's convention)
//   GET /processes                 every segment as a JSON list, like --list
// Read-only: it maps segments read-only and opens modules to symbolize, nothing else.
#pragma once

#include "http_server.h"
#include "symbolizer.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace leakwrap {

inline constexpr const char* kDefaultListenAddress = "127.0.0.1:9464";
// A body larger than this is refused (503) instead of being built and sent.
inline constexpr std::size_t kMaxResponseBytes = std::size_t{64} << 20;

struct ListenAddress {
    std::string host;  // numeric, IPv6 without brackets
    int port = 0;      // 0: the kernel picks one
    bool loopback = false;

    std::string text() const;  // "127.0.0.1:9464", "[::1]:9464"
};

// "ADDR:PORT" with a numeric IPv4 address or a bracketed IPv6 one; throws std::invalid_argument
// with a message for the user otherwise.
ListenAddress parse_listen_address(const std::string& text);

// Whether an Accept header prefers OpenMetrics to the Prometheus text format.
bool accepts_openmetrics(const std::string& accept);

struct ServeOptions {
    ListenAddress listen;
    std::size_t top = 20;          // site rows per process in /metrics
    SymbolizerOptions symbolizer;  // --libc-lines
    // --all-users: every client gets every segment the server may read, whoever it is; else a
    // loopback client gets its own user's (root's, all), any other client none.
    bool all_users = false;
};

// serve's routes on `server`, sharing one cache of symbolizers for as long as the server holds
// them. serve_profiles runs them until a signal; a test runs them on a server of its own.
void add_profile_routes(HttpServer& server, const ServeOptions& options);

// Serves until SIGINT or SIGTERM; prints "serving on http://ADDR:PORT/" to stdout once it
// listens. Returns the exit status; throws std::runtime_error when it cannot listen.
int serve_profiles(const ServeOptions& options);

}  // namespace leakwrap
