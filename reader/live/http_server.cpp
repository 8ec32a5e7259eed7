#include "http_server.h"

#include "gzip_writer.h"
#include "peer_identity.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace leakwrap {
namespace {

// Text and JSON answers at least this large are gzipped for a client that accepts it.
constexpr std::size_t kMinGzipBytes = 1024;

std::string lower_case(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower;
}

std::string_view trimmed(std::string_view text) {
    const std::size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

// The part of `rest` before the first `delimiter` (all of it if there is none); `rest` keeps what
// follows the delimiter.
std::string_view take_part(std::string_view* rest, char delimiter) {
    const std::size_t at = rest->find(delimiter);
    const std::string_view part = rest->substr(0, at);
    *rest = at == std::string_view::npos ? std::string_view{} : rest->substr(at + 1);
    return part;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// %XX escapes (and '+' for a space, in a query); false for a broken escape.
bool percent_decode(std::string_view text, bool plus_is_space, std::string* out) {
    out->clear();
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%') {
            if (i + 2 >= text.size()) return false;
            const int high = hex_digit(text[i + 1]), low = hex_digit(text[i + 2]);
            if (high < 0 || low < 0) return false;
            out->push_back(static_cast<char>(high * 16 + low));
            i += 2;
        } else {
            out->push_back(plus_is_space && text[i] == '+' ? ' ' : text[i]);
        }
    }
    return true;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 410: return "Gone";
        case 413: return "Content Too Large";
        case 431: return "Request Header Fields Too Large";
        case 503: return "Service Unavailable";
        default: return status >= 500 ? "Internal Server Error" : "Error";
    }
}

struct BadRequest {
    int status;
    std::string message;
};

// The request line and headers, up to the empty line.
HttpRequest parse_request_head(std::string_view head) {
    std::vector<std::string_view> lines;
    for (std::string_view rest = head; !rest.empty();) {
        std::string_view line = take_part(&rest, '\n');
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
    }
    if (lines.empty()) throw BadRequest{400, "an empty request"};
    const std::string_view request_line = lines.front();
    const std::size_t first_space = request_line.find(' ');
    const std::size_t last_space = request_line.rfind(' ');
    if (first_space == std::string_view::npos || first_space == last_space ||
        !request_line.substr(last_space + 1).starts_with("HTTP/1."))
        throw BadRequest{400, "not an HTTP/1.x request line"};
    HttpRequest request;
    request.method = std::string(request_line.substr(0, first_space));
    const std::string_view target = request_line.substr(first_space + 1, last_space - first_space - 1);
    if (!target.starts_with('/')) throw BadRequest{400, "the request target must be a path"};
    const std::size_t question = target.find('?');
    if (!percent_decode(target.substr(0, question), false, &request.path))
        throw BadRequest{400, "a broken %-escape in the path"};
    if (question != std::string_view::npos) {
        std::string_view query = target.substr(question + 1);
        while (!query.empty()) {
            std::string_view value_text = take_part(&query, '&');
            if (value_text.empty()) continue;
            const std::string_view name_text = take_part(&value_text, '=');
            std::string name, value;
            if (!percent_decode(name_text, true, &name) || !percent_decode(value_text, true, &value))
                throw BadRequest{400, "a broken %-escape in the query"};
            request.query.emplace_back(std::move(name), std::move(value));
        }
    }
    for (std::size_t i = 1; i < lines.size(); ++i) {
        if (lines[i].empty()) continue;
        const std::size_t colon = lines[i].find(':');
        if (colon == std::string_view::npos || colon == 0) throw BadRequest{400, "a header line without a name"};
        request.headers.emplace_back(lower_case(lines[i].substr(0, colon)),
                                     std::string(trimmed(lines[i].substr(colon + 1))));
    }
    return request;
}

// Whether Accept-Encoding takes gzip (or anything, *) with a quality above 0.
bool accepts_gzip(const std::string& accept_encoding) {
    for (const auto& [coding, quality] : weighted_items(accept_encoding))
        if ((coding == "gzip" || coding == "*") && quality > 0) return true;
    return false;
}

bool compressible(const std::string& content_type) {
    return content_type.starts_with("text/") || content_type.starts_with("application/json") ||
           content_type.starts_with("application/openmetrics-text");
}

// Sends all of `data`; false if the client went away or stalled past the socket's timeout.
bool send_all(int connection, std::string_view data) {
    while (!data.empty()) {
        const ssize_t sent = send(connection, data.data(), data.size(), MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
}

// What a response carries: a HEAD request gets the head a GET would, without the body.
enum class Carries : bool { head_and_body, head_only };

void send_response(int connection, HttpResponse response, bool gzip, Carries carries = Carries::head_and_body) {
    if (gzip && response.body.size() >= kMinGzipBytes && compressible(response.content_type)) {
        std::ostringstream compressed;
        GzipWriter writer(compressed, GzipWriter::kFast);
        writer.write(response.body);
        writer.finish();
        response.body = std::move(compressed).str();
        response.headers.emplace_back("Content-Encoding", "gzip");
        response.headers.emplace_back("Vary", "Accept-Encoding");
    }
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) +
                       "\r\nContent-Type: " + response.content_type +
                       "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\nConnection: close\r\n";
    for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
    head += "\r\n";
    if (send_all(connection, head) && carries == Carries::head_and_body) send_all(connection, response.body);
}

void send_error(int connection, int status, const std::string& message, Carries carries = Carries::head_and_body) {
    HttpResponse response;
    response.status = status;
    response.body = message + "\n";
    if (status == 405) response.headers.emplace_back("Allow", "GET, HEAD");
    send_response(connection, std::move(response), false, carries);
}

// The length of the request head in `buffer` once it is all there, else npos. Throws BadRequest
// when the head is too large.
std::size_t complete_head_length(const std::string& buffer) {
    std::size_t length = buffer.find("\r\n\r\n");
    if (length != std::string::npos)
        length += 4;
    else if ((length = buffer.find("\n\n")) != std::string::npos)
        length += 2;
    if (std::min(length, buffer.size()) > HttpServer::kMaxRequestHead)
        throw BadRequest{431, "the request head is over " + std::to_string(HttpServer::kMaxRequestHead) + " bytes"};
    return length;
}

// A connection sending its request head, and by when it must have sent it whole.
struct PendingHead {
    int connection;
    std::string buffer;
    std::chrono::steady_clock::time_point deadline;
};

void set_blocking(int connection, bool blocking) {
    const int flags = fcntl(connection, F_GETFL);
    if (flags >= 0) fcntl(connection, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

}  // namespace

std::vector<std::pair<std::string, double>> weighted_items(std::string_view header) {
    std::vector<std::pair<std::string, double>> items;
    while (!header.empty()) {
        std::string_view parameters = take_part(&header, ',');
        const std::string name = lower_case(trimmed(take_part(&parameters, ';')));
        if (name.empty()) continue;
        double quality = 1;
        while (!parameters.empty()) {
            const std::string_view parameter = trimmed(take_part(&parameters, ';'));
            if (parameter.starts_with("q=")) quality = std::strtod(std::string(parameter.substr(2)).c_str(), nullptr);
        }
        items.emplace_back(name, quality);
    }
    return items;
}

const std::string* HttpRequest::query_value(std::string_view name) const {
    for (const auto& [key, value] : query)
        if (key == name) return &value;
    return nullptr;
}

std::string HttpRequest::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (key == name) return value;
    return "";
}

HttpServer::HttpServer() : stop_event_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (stop_event_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
}

HttpServer::~HttpServer() {
    if (listening_ >= 0) close(listening_);
    close(stop_event_);
}

void HttpServer::get(std::string path, HttpHandler handler) { handlers_[std::move(path)] = std::move(handler); }

int HttpServer::listen(const std::string& host, int port) {
    sockaddr_storage address{};
    socklen_t length = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(port));
        length = sizeof(*v4);
    } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(port));
        length = sizeof(*v6);
    } else {
        throw std::runtime_error(host + " is not a numeric address");
    }
    const int socket_fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket_fd < 0) throw std::runtime_error(std::strerror(errno));
    // SO_REUSEADDR lets a restarted server take its port while old connections linger; no
    // SO_REUSEPORT, with which a second server on the same port would share it silently.
    const int yes = 1;
    setsockopt(socket_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(socket_fd, SOMAXCONN) != 0 ||
        getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        const int error = errno;
        close(socket_fd);
        throw std::runtime_error(std::strerror(error));
    }
    if (listening_ >= 0) close(listening_);
    listening_ = socket_fd;
    return ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
}

void HttpServer::stop() {
    {
        const std::scoped_lock lock(waiting_mutex_);
        stopping_.store(true);
        for (const int connection : answering_) shutdown(connection, SHUT_RDWR);
    }
    const uint64_t one = 1;
    // The eventfd's counter cannot overflow from these: one write per stop().
    [[maybe_unused]] const ssize_t written = write(stop_event_, &one, sizeof(one));
    connection_waiting_.notify_all();
}

void HttpServer::run() {
    std::vector<std::thread> workers;
    for (std::size_t i = 0; i < kWorkers; ++i) workers.emplace_back([this] { work(); });
    take_in_requests();
    {
        const std::scoped_lock lock(waiting_mutex_);
        stopping_.store(true);
    }
    connection_waiting_.notify_all();
    for (std::thread& worker : workers) worker.join();
    for (const ReceivedHead& received : waiting_) close(received.connection);
    waiting_.clear();
}

void HttpServer::hand_to_workers(ReceivedHead received) {
    set_blocking(received.connection, true);
    const timeval timeout{kSendTimeoutSeconds, 0};
    setsockopt(received.connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    std::unique_lock lock(waiting_mutex_);
    if (waiting_.size() >= kMaxWaiting) {
        lock.unlock();
        send_error(received.connection, 503, "too many requests waiting; try again");
        close(received.connection);
        return;
    }
    waiting_.push_back(std::move(received));
    lock.unlock();
    connection_waiting_.notify_one();
}

// One thread, one poll over the listening socket and every connection still sending its head:
// a client that sends slowly, or nothing, costs a descriptor and a buffer, never a worker.
void HttpServer::take_in_requests() {
    using Clock = std::chrono::steady_clock;
    std::vector<PendingHead> pending;
    // A refusal whose client may still be sending goes to a worker, which reads what follows
    // before closing (end_answer); a client out of time has sent nothing unread, so it is
    // answered here, at once, and costs no worker a drain.
    const auto refuse = [this](PendingHead& head, int status, std::string why) {
        hand_to_workers({head.connection, {}, status, std::move(why)});
    };
    const auto out_of_time = [](PendingHead& head, const std::string& why) {
        send_error(head.connection, 408, why);
        shutdown(head.connection, SHUT_WR);
        close(head.connection);
    };
    std::vector<pollfd> watched;
    set_blocking(listening_, false);  // accepts until none is left
    while (!stopping_.load()) {
        watched.assign({{listening_, POLLIN, 0}, {stop_event_, POLLIN, 0}});
        auto next_deadline = Clock::time_point::max();
        for (const PendingHead& head : pending) {
            watched.push_back({head.connection, POLLIN, 0});
            next_deadline = std::min(next_deadline, head.deadline);
        }
        const int timeout_ms =
            pending.empty()
                ? -1
                : static_cast<int>(std::max<int64_t>(
                      0, std::chrono::ceil<std::chrono::milliseconds>(next_deadline - Clock::now()).count()));
        if (poll(watched.data(), watched.size(), timeout_ms) < 0 && errno != EINTR) break;
        if (watched[1].revents != 0) break;
        const Clock::time_point now = Clock::now();
        std::vector<PendingHead> still;
        for (std::size_t i = 0; i < pending.size(); ++i) {
            PendingHead& head = pending[i];
            if (now >= head.deadline) {
                out_of_time(head, "the request head did not come whole within " + std::to_string(kRequestHeadSeconds) +
                                      " seconds");
                continue;
            }
            if (watched[i + 2].revents == 0) {
                still.push_back(std::move(head));
                continue;
            }
            char chunk[4096];
            const ssize_t got = recv(head.connection, chunk, sizeof(chunk), 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
                still.push_back(std::move(head));
                continue;
            }
            if (got <= 0) {
                if (head.buffer.empty())
                    close(head.connection);  // went away without a word
                else
                    refuse(head, 400, "the request ended before its head did");
                continue;
            }
            head.buffer.append(chunk, static_cast<std::size_t>(got));
            try {
                const std::size_t length = complete_head_length(head.buffer);
                if (length == std::string::npos) {
                    still.push_back(std::move(head));
                    continue;
                }
                head.buffer.resize(length);
                hand_to_workers({head.connection, std::move(head.buffer), 0, {}});
            } catch (const BadRequest& bad) {
                refuse(head, bad.status, bad.message);
            }
        }
        pending = std::move(still);
        if (watched[0].revents == 0) continue;
        for (int connection; (connection = accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
            if (pending.size() >= kMaxPending) {
                // The oldest has had the longest to send its head: it makes room.
                out_of_time(pending.front(), "the server had more clients sending requests than it holds");
                pending.erase(pending.begin());
            }
            pending.push_back({connection, {}, Clock::now() + std::chrono::seconds(kRequestHeadSeconds)});
        }
        // Out of descriptors: wait for a worker to close one instead of spinning.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (const PendingHead& head : pending) {
        shutdown(head.connection, SHUT_RDWR);
        close(head.connection);
    }
}

namespace {

// Closing a socket with unread input makes the kernel reset the connection, and a client may then
// lose the answer before reading it (one refused for its size, or for its body). So the answer is
// ended with a FIN and what the client still sends is read and dropped, until it closes its side,
// kMaxDrainedBytes have come or it has been silent for a second. The caller then closes it.
constexpr std::size_t kMaxDrainedBytes = 1 << 20;

void end_answer(int connection) {
    shutdown(connection, SHUT_WR);
    const timeval timeout{1, 0};
    setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    char dropped[4096];
    for (std::size_t drained = 0; drained < kMaxDrainedBytes;) {
        const ssize_t got = recv(connection, dropped, sizeof(dropped), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        drained += static_cast<std::size_t>(got);
    }
}

}  // namespace

void HttpServer::work() {
    while (true) {
        std::unique_lock lock(waiting_mutex_);
        connection_waiting_.wait(lock, [this] { return stopping_.load() || !waiting_.empty(); });
        if (stopping_.load()) return;
        const ReceivedHead received = std::move(waiting_.front());
        waiting_.pop_front();
        answering_.push_back(received.connection);
        lock.unlock();
        answer(received);
        end_answer(received.connection);
        lock.lock();
        std::erase(answering_, received.connection);
        lock.unlock();
        close(received.connection);
    }
}

void HttpServer::answer(const ReceivedHead& received) {
    const int connection = received.connection;
    HttpRequest request;
    try {
        if (received.refusal_status != 0) throw BadRequest{received.refusal_status, received.refusal};
        request = parse_request_head(received.head);
        request.peer_uid = loopback_peer_uid(connection);
        if (request.method != "GET" && request.method != "HEAD")
            throw BadRequest{405, request.method + " is not served; only GET and HEAD"};
        const std::string length = request.header("content-length");
        if ((!length.empty() && length != "0") || !request.header("transfer-encoding").empty())
            throw BadRequest{413, "a " + request.method + " request has no body here"};
    } catch (const BadRequest& bad) {
        send_error(connection, bad.status, bad.message,
                   request.method == "HEAD" ? Carries::head_only : Carries::head_and_body);
        return;
    }
    const Carries carries = request.method == "HEAD" ? Carries::head_only : Carries::head_and_body;
    const auto handler = handlers_.find(request.path);
    if (handler == handlers_.end()) {
        std::string paths;
        for (const auto& [path, unused] : handlers_) paths += (paths.empty() ? "" : ", ") + path;
        send_error(connection, 404, "no such path: " + request.path + " (served: " + paths + ")", carries);
        return;
    }
    HttpResponse response;
    try {
        handler->second(request, response);
    } catch (const std::exception& error) {
        response = HttpResponse{};
        response.status = 500;
        response.body = std::string(error.what()) + "\n";
    }
    send_response(connection, std::move(response), accepts_gzip(request.header("accept-encoding")), carries);
}

}  // namespace leakwrap
