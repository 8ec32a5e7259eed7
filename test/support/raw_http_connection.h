// A TCP connection to a server under test that sends bytes exactly as the test gives them, broken
// heads and stalls included, which no proper HTTP client would send, and reads back what the
// server wrote.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap {

// How long a test waits for a server before it fails instead of hanging: far longer than any
// answer or deadline of serve's server takes, short of ctest's timeout.
inline constexpr std::chrono::seconds kAnswerPatience{30};

struct RawHttpResponse {
    int status = 0;
    std::string reason;
    std::vector<std::pair<std::string, std::string>> headers;  // in order, as written
    std::string body;                                          // all that followed the head

    // The first value of a header, its name in any case; "" if it is not there.
    std::string header(std::string_view name) const;
    bool has_header(std::string_view name) const;
};

// Throws std::runtime_error unless `bytes` start with a status line and headers up to an empty
// line.
RawHttpResponse parse_http_response(std::string_view bytes);

class RawHttpConnection {
public:
    // A numeric address, as the server listens on.
    RawHttpConnection(const std::string& host, int port);
    ~RawHttpConnection();
    RawHttpConnection(const RawHttpConnection&) = delete;
    RawHttpConnection& operator=(const RawHttpConnection&) = delete;

    void send(std::string_view bytes);
    // The client's FIN: it has nothing more to send.
    void finish_sending();
    // The next `count` bytes the server sends, fewer if it ends the connection first.
    std::string read(std::size_t count);
    // Whether the server sent something, or ended the connection, within `wait`.
    bool readable_within(std::chrono::milliseconds wait);
    // All the server sends until it ends the connection. A server that sends nothing for
    // kAnswerPatience fails the test with std::runtime_error.
    std::string read_to_end();
    RawHttpResponse response() { return parse_http_response(read_to_end()); }

private:
    int socket_ = -1;
};

// One request, sent whole and followed by the client's FIN, over a connection of its own, and its
// answer.
RawHttpResponse http_exchange(int port, std::string_view request, const std::string& host = "127.0.0.1");

}  // namespace leakwrap
