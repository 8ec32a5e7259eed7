// The HTTP side of `serve`: a small HTTP/1.1 server for GET requests, written for it so that
// leakwrap-report links no HTTP library (Debian's cpp-httplib brings OpenSSL and brotli into
// every command, resident before any work).
//
// What it does, and all it does:
//  - one request per connection: every answer says `Connection: close`;
//  - GET only (405 otherwise), a request head of at most kMaxRequestHead bytes (431), no body
//    (413): nothing here takes input beyond a path and a query;
//  - one thread takes in every request head at once (poll over non-blocking sockets), so slow
//    or idle clients hold no worker: a head must come whole within kRequestHeadSeconds of the
//    connection (408), and past kMaxPending connections sending their heads the oldest is
//    answered 408 to make room; kWorkers threads then answer the complete requests, and those
//    beyond kMaxWaiting waiting ones get 503 at once;
//  - a client that takes no part of the answer for kSendTimeoutSeconds is dropped;
//  - an answer whose type is text or JSON is gzipped for a client that accepts gzip.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap {

struct HttpRequest {
    std::string method;
    std::string path;                                          // percent-decoded, without the query
    std::vector<std::pair<std::string, std::string>> query;    // decoded, in order
    std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
    // The user of a loopback client (peer_identity.h); none for any other client.
    std::optional<uid_t> peer_uid;

    // The first value of a query parameter; null if it is not given.
    const std::string* query_value(std::string_view name) const;
    // A header's value, "" if it is not given; `name` in lower case.
    std::string header(std::string_view name) const;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::vector<std::pair<std::string, std::string>> headers;  // beyond those the server writes
    std::string body;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

// The items of a header that lists them with qualities (Accept, Accept-Encoding), in order and in
// lower case, each with its q (1 when not given): "text/plain;q=0.5, Gzip" gives
// {{"text/plain", 0.5}, {"gzip", 1}}. Parameters other than q are dropped.
std::vector<std::pair<std::string, double>> weighted_items(std::string_view header);

class HttpServer {
public:
    static constexpr std::size_t kWorkers = 2;
    static constexpr std::size_t kMaxWaiting = 64;
    static constexpr std::size_t kMaxPending = 512;
    static constexpr std::size_t kMaxRequestHead = 16 * 1024;
    static constexpr int kRequestHeadSeconds = 5;
    static constexpr int kSendTimeoutSeconds = 5;

    HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;
    ~HttpServer();

    // Answers GET `path` (exactly, whatever the query). Handlers run on the worker threads, two
    // at a time; what they throw becomes a 500 with the exception's message.
    void get(std::string path, HttpHandler handler);

    // Listens on a numeric IPv4 or IPv6 address; port 0 lets the kernel pick one. Returns the
    // port; throws std::runtime_error saying why it cannot listen.
    int listen(const std::string& host, int port);

    // Serves until stop(), then lets the requests being answered finish; returns at once if
    // stop() came first.
    void run();

    // From any thread, at any time, also before run(). Connections being answered are shut
    // down, so that a stalled client does not hold the stop for its timeout.
    void stop();

private:
    // A connection whose request head came whole (or could not: `refusal` then says why).
    struct ReceivedHead {
        int connection = -1;
        std::string head;
        int refusal_status = 0;  // 0: the head is to be answered
        std::string refusal;
    };

    void take_in_requests();
    void hand_to_workers(ReceivedHead received);
    void work();
    void answer(const ReceivedHead& received);

    std::map<std::string, HttpHandler, std::less<>> handlers_;
    int listening_ = -1;
    int stop_event_ = -1;  // an eventfd, readable once stop() is called
    std::atomic<bool> stopping_{false};
    std::mutex waiting_mutex_;
    std::condition_variable connection_waiting_;
    std::deque<ReceivedHead> waiting_;  // complete heads no worker has taken yet
    // Connections the workers are answering: a worker takes one off this list, under the mutex,
    // before it closes it, so that stop() never shuts down a descriptor reused meanwhile.
    std::vector<int> answering_;
};

}  // namespace leakwrap
