#include "profile_server.h"

#include "birth_window.h"
#include "http_server.h"
#include "process_identity.h"
#include "process_memory.h"
#include "process_tree.h"
#include "report_openmetrics.h"
#include "report_pprof.h"
#include "segment_directory.h"
#include "segment_file.h"
#include "watch_duration.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace leakwrap {
namespace {

struct HttpError {
    int status;
    std::string message;
};

// A segment read swaps the process-wide SIGBUS handler for the time of its copy (a segment
// truncated under the reader must not kill it); two reads at once could restore the handlers out
// of order and leave a copy unguarded, so the workers read one at a time. The copy is short next
// to symbolizing.
std::mutex segment_read_mutex;

Snapshot read_one_at_a_time(const SegmentEntry& entry) {
    const std::scoped_lock lock(segment_read_mutex);
    return read_segment(entry);
}

// A process with a readable segment, as the reports show it.
struct Process {
    Snapshot snapshot;
    OwnerState state;
};

// The segment's process as the reports show it, with its RSS when it is alive.
Process read_process_entry(const SegmentEntry& entry) {
    Snapshot snapshot = read_one_at_a_time(entry);
    const OwnerState state = owner_state(snapshot);
    snapshot.command_line = current_command_line(snapshot, state);
    if (state == OwnerState::alive)
        snapshot.memory = read_process_memory(entry.pid, entry.path, snapshot.writer_private_bytes.value_or(0));
    return {std::move(snapshot), state};
}

// Symbolizing is most of a request's work, and scrapers ask for the same processes again and
// again: each process keeps its symbolizer, which caches what it resolved. A symbolizer is not
// thread-safe: whoever uses one holds the lock.
class SymbolizerCache {
public:
    explicit SymbolizerCache(SymbolizerOptions options) : options_(options) {}

    std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }

    // Under the lock.
    Symbolizer& of(const Snapshot& snapshot) {
        return entries_.try_emplace({snapshot.pid, snapshot.start_time_ticks}, options_).first->second.of(snapshot);
    }

    // Under the lock: drops the symbolizers of processes that are gone.
    void forget_gone_processes() {
        std::erase_if(entries_, [](const auto& entry) {
            const auto [pid, start_time] = entry.first;
            return process_start_time_ticks(pid) != start_time;
        });
    }

private:
    SymbolizerOptions options_;
    std::mutex mutex_;
    std::map<std::pair<pid_t, uint64_t>, ProcessSymbolizer> entries_;  // by pid and start time
};

// Whether the client may see a segment: what its user could read with leakwrap-report itself,
// the segments of its own (a segment is its process's user's, mode 0600), all of them for root.
class ClientAccess {
public:
    ClientAccess(const HttpRequest& request, const ServeOptions& options)
        : all_(options.all_users), uid_(request.peer_uid) {
        if (!all_ && !uid_)
            throw HttpError{403,
                            "serve tells which user a client is on loopback only; --all-users "
                            "serves every client every segment"};
    }

    bool may_see(const SegmentEntry& entry) const {
        if (all_ || *uid_ == 0) return true;
        struct stat status {};
        return lstat(entry.path.c_str(), &status) == 0 && status.st_uid == *uid_;
    }

private:
    bool all_;
    std::optional<uid_t> uid_;
};

// The process of ?pid=N, alive; otherwise the status and message that say why not. A process
// can die and its segment vanish or shrink at any moment, also while it is read.
Process live_process(pid_t pid, const ClientAccess& access) {
    const std::string id = std::to_string(pid);
    const SegmentEntry entry{pid, segment_path(pid)};
    if (!access.may_see(entry) && std::filesystem::exists(entry.path))
        throw HttpError{403, "the segment of process " + id + " is another user's"};
    try {
        Process process = read_process_entry(entry);
        if (process.state != OwnerState::alive)
            throw HttpError{404, "process " + id + " is not running (its segment is " +
                                     std::string(owner_state_name(process.state)) + "); leakwrap-report " + id +
                                     " reports it post mortem"};
        return process;
    } catch (const SegmentFileError& error) {
        if (error.error_number() == ENOENT)
            throw HttpError{404, process_exists(pid) ? "process " + id + " has no leakwrap segment"
                                                     : "no process " + id + " and no leakwrap segment of it"};
        if (error.error_number() == EACCES || error.error_number() == EPERM || error.error_number() == 0)
            throw HttpError{403, error.what()};
        throw HttpError{process_exists(pid) ? 500 : 410, error.what()};
    } catch (const SegmentError& error) {
        throw HttpError{process_exists(pid) ? 500 : 410, error.what()};
    }
}

// Every live process whose segment this user may read, one at a time: each is given back before
// the next is read. A dead process's series must go stale, not stay at its last value; and since
// /dev/shm may hold many segments left behind, one whose pid is gone is not even read.
template <class Visit>
void for_each_live_process(const ClientAccess& access, const Visit& visit) {
    for (const SegmentEntry& entry : find_segments()) {
        if (!process_exists(entry.pid) || !access.may_see(entry)) continue;
        std::optional<Process> process;
        try {
            process = read_process_entry(entry);
        } catch (const std::exception&) {
            // Another user's, gone since it was listed, or not a segment: not ours to show.
        }
        if (process && process->state == OwnerState::alive) visit(*process);
    }
}

pid_t pid_parameter(const HttpRequest& request) {
    const std::string* given = request.query_value("pid");
    if (given == nullptr) throw HttpError{400, "give the process as ?pid=N (GET /processes lists them)"};
    const std::string& text = *given;
    int64_t pid = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (error != std::errc() || end != text.data() + text.size() || pid <= 0 || pid > INT_MAX)
        throw HttpError{400, "pid must be a whole number from 1 to " + std::to_string(INT_MAX)};
    return static_cast<pid_t>(pid);
}

void set_body(HttpResponse& response, std::string body, const std::string& content_type) {
    if (body.size() > kMaxResponseBytes)
        throw HttpError{503, "the response would be " + std::to_string(body.size() >> 20) + " MiB, over the limit of " +
                                 std::to_string(kMaxResponseBytes >> 20) + " MiB"};
    response.body = std::move(body);
    response.content_type = content_type;
}

// Runs a handler; an HttpError it throws becomes a one-line plain-text answer with its status
// (anything else it throws, the server answers 500 with the message).
template <typename Handler>
void answer(HttpResponse& response, Handler handler) {
    try {
        handler();
    } catch (const HttpError& error) {
        response = HttpResponse{};
        response.status = error.status;
        response.body = error.message + "\n";
    }
}

void serve_metrics(const HttpRequest& request, HttpResponse& response, const ServeOptions& options,
                   SymbolizerCache& symbolizers) {
    const ClientAccess access(request, options);
    const MetricsDialect dialect =
        accepts_openmetrics(request.header("accept")) ? MetricsDialect::openmetrics : MetricsDialect::prometheus;
    ReportOptions report;
    report.top = options.top;
    MetricsExposition exposition;
    {
        const auto lock = symbolizers.lock();
        symbolizers.forget_gone_processes();
    }
    for_each_live_process(access, [&](const Process& process) {
        const auto lock = symbolizers.lock();
        exposition.add({process.snapshot, process.state, symbolizers.of(process.snapshot), report});
    });
    std::ostringstream body;
    exposition.write(body, dialect);
    set_body(response, std::move(body).str(), std::string(metrics_content_type(dialect)));
}

// ?children=1 asks for the process and its live descendants merged, as --children does.
bool children_parameter(const HttpRequest& request) {
    const std::string* given = request.query_value("children");
    if (given == nullptr) return false;
    const std::string& value = *given;
    if (value == "1" || value == "true") return true;
    if (value == "0" || value == "false") return false;
    throw HttpError{400, "children must be 1 or 0 (true or false), not " + value};
}

// ?born_after=10m and ?born_before=DURATION keep the memory born in that window, as
// --born-after and --born-before do.
BirthWindow birth_window_parameters(const HttpRequest& request) {
    BirthWindow window;
    for (const auto& [name, moment] :
         {std::pair{"born_after", &window.after_ns}, std::pair{"born_before", &window.before_ns}}) {
        const std::string* given = request.query_value(name);
        if (given == nullptr) continue;
        *moment = parse_duration_ns(*given);
        if (!*moment)
            throw HttpError{400, std::string(name) + " must be a duration like 500ms, 5s, 2m or 1h, not " + *given};
    }
    return window;
}

// The profile, moved out of the stream it was written to rather than copied, and the snapshot it
// was made of given back before it is sent.
std::string heap_profile(const HttpRequest& request, const ServeOptions& options, SymbolizerCache& symbolizers) {
    const ClientAccess access(request, options);
    const BirthWindow window = birth_window_parameters(request);
    Process process = live_process(pid_parameter(request), access);
    if (children_parameter(request))
        process.snapshot = merge_process_tree(std::move(process.snapshot),
                                              read_live_descendants(process.snapshot.pid, [&access](pid_t pid) {
                                                  const SegmentEntry entry{pid, segment_path(pid)};
                                                  // Skipped, as a descendant the server itself may not read is.
                                                  if (!access.may_see(entry))
                                                      throw std::runtime_error("another user's segment");
                                                  return read_process_entry(entry).snapshot;
                                              }));
    if (window.any()) {
        try {
            keep_births_within(process.snapshot, window);
        } catch (const std::runtime_error& error) {
            throw HttpError{400, error.what()};
        }
    }
    std::ostringstream profile;
    const auto lock = symbolizers.lock();
    symbolizers.forget_gone_processes();
    write_pprof_report(profile, {process.snapshot, process.state, symbolizers.of(process.snapshot), ReportOptions{}});
    return std::move(profile).str();
}

void serve_heap(const HttpRequest& request, HttpResponse& response, const ServeOptions& options,
                SymbolizerCache& symbolizers) {
    std::string profile = heap_profile(request, options, symbolizers);
    // As Go's net/http/pprof answers: the gzipped profile as a download.
    response.headers.emplace_back("Content-Disposition", "attachment; filename=\"heap\"");
    set_body(response, std::move(profile), "application/octet-stream");
}

void serve_process_list(const HttpRequest& request, HttpResponse& response, const ServeOptions& options) {
    const ClientAccess access(request, options);
    nlohmann::json list = nlohmann::json::array();
    for (const SegmentEntry& entry : find_segments()) {
        if (!access.may_see(entry)) continue;
        try {
            const Process process = read_process_entry(entry);
            const Snapshot& snapshot = process.snapshot;
            list.push_back(
                {{"pid", snapshot.pid},
                 {"state", owner_state_name(process.state)},
                 {"exe", snapshot.exe},
                 {"command_line", snapshot.command_line},
                 {"live_bytes", snapshot.totals.live_bytes()},
                 {"live_blocks", snapshot.totals.live_blocks()},
                 {"sites", snapshot.sites_in_use()},
                 {"rss_bytes", snapshot.memory ? nlohmann::json(snapshot.memory->rss()) : nlohmann::json(nullptr)}});
        } catch (const std::exception& error) {
            list.push_back({{"pid", entry.pid}, {"state", "unreadable"}, {"error", error.what()}});
        }
    }
    set_body(response, list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "application/json");
}

// SIGINT and SIGTERM are blocked in every thread (the server's workers start after this, with
// the mask) and taken by one that waits for them, since stopping the server is no work for a
// signal handler.
class StopOnSignal {
public:
    explicit StopOnSignal(HttpServer& server) {
        sigemptyset(&signals_);
        sigaddset(&signals_, SIGINT);
        sigaddset(&signals_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
        waiter_ = std::thread([this, &server] {
            int signal = 0;
            sigwait(&signals_, &signal);
            if (stopping_.exchange(true)) return;  // woken by listening_ended()
            signal_ = signal;
            server.stop();
        });
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;
    ~StopOnSignal() {
        if (waiter_.joinable()) listening_ended();
    }

    // Once the server stopped: wakes the waiting thread if no signal came, and returns the signal
    // that stopped the server, 0 if none did.
    int listening_ended() {
        if (!stopping_.exchange(true)) pthread_kill(waiter_.native_handle(), SIGTERM);
        waiter_.join();
        return signal_;
    }

private:
    sigset_t signals_;
    std::atomic<bool> stopping_{false};
    int signal_ = 0;
    std::thread waiter_;
};

}  // namespace

std::string ListenAddress::text() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ListenAddress parse_listen_address(const std::string& text) {
    const auto invalid = [&](const std::string& why) {
        return std::invalid_argument("--listen " + text + ": " + why +
                                     " (give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)");
    };
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw invalid("no port");
    ListenAddress address;
    address.host = text.substr(0, colon);
    const bool bracketed = address.host.size() >= 2 && address.host.front() == '[' && address.host.back() == ']';
    if (bracketed) address.host = address.host.substr(1, address.host.size() - 2);
    const std::string port = text.substr(colon + 1);
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), address.port);
    if (port.empty() || error != std::errc() || end != port.data() + port.size() || address.port < 0 ||
        address.port > 65535)
        throw invalid("the port must be a number from 0 to 65535");
    unsigned char bytes[sizeof(in6_addr)];
    if (bracketed && inet_pton(AF_INET6, address.host.c_str(), bytes) == 1) {
        static const unsigned char kLoopback6[sizeof(in6_addr)] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        address.loopback = std::memcmp(bytes, kLoopback6, sizeof(kLoopback6)) == 0;
    } else if (!bracketed && inet_pton(AF_INET, address.host.c_str(), bytes) == 1) {
        address.loopback = bytes[0] == 127;  // 127.0.0.0/8
    } else {
        throw invalid("not a numeric IPv4 address or a bracketed IPv6 address");
    }
    return address;
}

bool accepts_openmetrics(const std::string& accept) {
    // The best quality given to each format.
    double openmetrics = 0, text = 0;
    for (const auto& [type, quality] : weighted_items(accept)) {
        if (type == "application/openmetrics-text")
            openmetrics = std::max(openmetrics, quality);
        else if (type == "text/plain" || type == "text/*" || type == "*/*")
            text = std::max(text, quality);
    }
    return openmetrics > 0 && openmetrics >= text;
}

void add_profile_routes(HttpServer& server, const ServeOptions& options) {
    const auto symbolizers = std::make_shared<SymbolizerCache>(options.symbolizer);
    server.get("/metrics", [options, symbolizers](const HttpRequest& request, HttpResponse& response) {
        answer(response, [&] { serve_metrics(request, response, options, *symbolizers); });
    });
    server.get("/debug/pprof/heap", [options, symbolizers](const HttpRequest& request, HttpResponse& response) {
        answer(response, [&] { serve_heap(request, response, options, *symbolizers); });
    });
    server.get("/processes", [options](const HttpRequest& request, HttpResponse& response) {
        answer(response, [&] { serve_process_list(request, response, options); });
    });
}

int serve_profiles(const ServeOptions& options) {
    // One heap for the workers: each thread's own arena kept what its last answer freed, so that
    // the second worker's first profile stood on the first's.
    // The workers symbolize one at a time anyway.
    mallopt(M_ARENA_MAX, 1);
    HttpServer server;
    add_profile_routes(server, options);

    ListenAddress bound = options.listen;
    try {
        bound.port = server.listen(bound.host, bound.port);
    } catch (const std::runtime_error& error) {
        throw std::runtime_error("cannot listen on " + options.listen.text() + ": " + error.what());
    }
    // Sockets are written with MSG_NOSIGNAL; stdout may be a pipe whose reader goes away, which
    // must not end the server either.
    signal(SIGPIPE, SIG_IGN);
    StopOnSignal stop(server);
    std::cout << "serving on http://" << bound.text() << "/ (GET /metrics, /debug/pprof/heap?pid=N, /processes)"
              << std::endl;
    server.run();
    const int signal = stop.listening_ended();
    std::cout << "serve: stopped" << (signal != 0 ? std::string(" by ") + sigabbrev_np(signal) : "") << std::endl;
    return 0;
}

}  // namespace leakwrap
