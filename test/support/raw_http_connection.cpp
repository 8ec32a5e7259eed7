#include "raw_http_connection.h"

#include "socket_addresses.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace leakwrap {
namespace {

bool same_name(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
    });
}

std::runtime_error socket_error(const std::string& what, int error) {
    return std::runtime_error(what + ": " + std::strerror(error));
}

}  // namespace

std::string RawHttpResponse::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (same_name(key, name)) return value;
    return "";
}

bool RawHttpResponse::has_header(std::string_view name) const {
    return std::any_of(headers.begin(), headers.end(),
                       [&](const auto& header) { return same_name(header.first, name); });
}

RawHttpResponse parse_http_response(std::string_view bytes) {
    const std::size_t head_end = bytes.find("\r\n\r\n");
    if (head_end == std::string_view::npos)
        throw std::runtime_error("no complete response head in: " + std::string(bytes.substr(0, 200)));
    RawHttpResponse response;
    response.body = std::string(bytes.substr(head_end + 4));
    std::string_view head = bytes.substr(0, head_end + 2);
    const auto next_line = [&head] {
        const std::size_t end = head.find("\r\n");
        const std::string_view line = head.substr(0, end);
        head.remove_prefix(end + 2);
        return line;
    };
    const std::string_view status_line = next_line();
    if (!status_line.starts_with("HTTP/1.1 ") || status_line.size() < 13 || status_line[12] != ' ')
        throw std::runtime_error("not a status line: " + std::string(status_line));
    response.status = std::stoi(std::string(status_line.substr(9, 3)));
    response.reason = std::string(status_line.substr(13));
    while (!head.empty()) {
        const std::string_view line = next_line();
        const std::size_t colon = line.find(": ");
        if (colon == std::string_view::npos) throw std::runtime_error("not a header: " + std::string(line));
        response.headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    }
    return response;
}

RawHttpConnection::RawHttpConnection(const std::string& host, int port) {
    const SocketAddress address = numeric_address(host, port);
    socket_ = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket_ < 0) throw socket_error("socket", errno);
    const timeval patience{kAnswerPatience.count(), 0};
    setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
    setsockopt(socket_, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof(patience));
    if (connect(socket_, address.get(), address.length) != 0) {
        const int error = errno;
        close(socket_);
        throw socket_error("connect to " + host + " port " + std::to_string(port), error);
    }
}

RawHttpConnection::~RawHttpConnection() { close(socket_); }

void RawHttpConnection::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t sent = ::send(socket_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) throw socket_error("send", errno);
        bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
}

void RawHttpConnection::finish_sending() { shutdown(socket_, SHUT_WR); }

std::string RawHttpConnection::read(std::size_t count) {
    std::string received;
    char chunk[65536];
    while (received.size() < count) {
        const ssize_t got = recv(socket_, chunk, std::min(sizeof(chunk), count - received.size()), 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            throw std::runtime_error("the server neither sent more nor ended the connection within " +
                                     std::to_string(kAnswerPatience.count()) +
                                     " seconds; got: " + received.substr(0, 200));
        // A reset ends the connection as a close does; what came before it is what the client got.
        if (got <= 0) break;
        received.append(chunk, static_cast<std::size_t>(got));
    }
    return received;
}

std::string RawHttpConnection::read_to_end() { return read(std::string::npos); }

bool RawHttpConnection::readable_within(std::chrono::milliseconds wait) {
    pollfd watched{socket_, POLLIN, 0};
    return poll(&watched, 1, static_cast<int>(wait.count())) > 0;
}

RawHttpResponse http_exchange(int port, std::string_view request, const std::string& host) {
    RawHttpConnection connection(host, port);
    connection.send(request);
    connection.finish_sending();
    return connection.response();
}

}  // namespace leakwrap
