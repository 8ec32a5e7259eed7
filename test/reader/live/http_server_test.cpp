// leakwrap's own HTTP server over real loopback sockets: what a request becomes for its handler,
// what the server answers by itself, and the limits that keep clients from holding it.
#include "gunzip.h"
#include "http_server.h"
#include "raw_http_connection.h"
#include "server_thread.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace leakwrap {
namespace {

using testing::ServerThread;
using Clock = std::chrono::steady_clock;
using Pairs = std::vector<std::pair<std::string, std::string>>;

// Far beyond what the sockets of a connection buffer, so that a client that reads none of it
// stalls the worker sending it.
constexpr std::size_t kUnbufferedAnswerBytes = std::size_t{64} << 20;

HttpHandler answering(std::string body, std::string content_type = "text/plain; charset=utf-8") {
    return
        [body = std::move(body), content_type = std::move(content_type)](const HttpRequest&, HttpResponse& response) {
            response.content_type = content_type;
            response.body = body;
        };
}

// What a handler was given, for the test to look at once the answer came.
class RecordedRequest {
public:
    HttpHandler handler() {
        return [this](const HttpRequest& request, HttpResponse& response) {
            const std::scoped_lock lock(mutex_);
            request_ = request;
            response.body = "recorded\n";
        };
    }

    std::optional<HttpRequest> request() const {
        const std::scoped_lock lock(mutex_);
        return request_;
    }

private:
    mutable std::mutex mutex_;
    std::optional<HttpRequest> request_;
};

// Holds the handlers that pass through it until the test opens it, so that a test knows what the
// workers are doing.
class Gate {
public:
    // In a handler. A gate the test never opens lets it go after kAnswerPatience, so that a
    // failed test cannot hang the server's stop.
    void pass() {
        std::unique_lock lock(mutex_);
        ++held_;
        changed_.notify_all();
        changed_.wait_for(lock, kAnswerPatience, [this] { return open_; });
    }

    bool wait_until_holding(std::size_t handlers) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, kAnswerPatience, [&] { return held_ >= handlers; });
    }

    void open() {
        const std::scoped_lock lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t held_ = 0;
    bool open_ = false;
};

// A request head of exactly `size` bytes, padded in a header.
std::string head_of_size(std::size_t size) {
    const std::string start = "GET /x HTTP/1.1\r\nX-Padding: ";
    const std::string end = "\r\n\r\n";
    return start + std::string(size - start.size() - end.size(), 'p') + end;
}

class HttpServerTest : public ::testing::Test {
protected:
    ~HttpServerTest() override {
        gate_.open();  // a test that failed while handlers were held still stops
        running_.reset();
    }

    // Serves the paths given so far.
    void start(const std::string& host = "127.0.0.1") {
        running_.emplace(server_, host);
        host_ = host;
    }

    RawHttpConnection connect() { return RawHttpConnection(host_, running_->port()); }

    RawHttpResponse exchange(std::string_view request) { return http_exchange(running_->port(), request, host_); }

    Gate gate_;
    HttpServer server_;
    std::optional<ServerThread> running_;
    std::string host_;
};

TEST_F(HttpServerTest, GivesTheHandlerTheDecodedPathQueryAndHeaders) {
    RecordedRequest recorded;
    server_.get("/a+b c/ü", recorded.handler());
    start();
    const RawHttpResponse response = exchange(
        "GET /a+b%20c/%C3%BC?x=1&name=J%C3%B6rg+Doe&&flag&x=2&a%3Db=c%26d HTTP/1.1\r\n"
        "Host: here\r\nX-Thing: \t padded value \t\r\nACCEPT: text/plain\r\n\r\n");
    ASSERT_EQ(response.status, 200) << response.body;
    const std::optional<HttpRequest> request = recorded.request();
    ASSERT_TRUE(request);
    EXPECT_EQ(request->method, "GET");
    EXPECT_EQ(request->path, "/a+b c/ü");  // '+' is a space in a query only
    EXPECT_EQ(request->query, (Pairs{{"x", "1"}, {"name", "Jörg Doe"}, {"flag", ""}, {"x", "2"}, {"a=b", "c&d"}}));
    ASSERT_NE(request->query_value("x"), nullptr);
    EXPECT_EQ(*request->query_value("x"), "1");
    EXPECT_EQ(request->query_value("y"), nullptr);
    EXPECT_EQ(request->headers, (Pairs{{"host", "here"}, {"x-thing", "padded value"}, {"accept", "text/plain"}}));
    EXPECT_EQ(request->header("accept"), "text/plain");
    EXPECT_EQ(request->header("cookie"), "");
    EXPECT_EQ(request->peer_uid, std::optional<uid_t>(getuid()));
}

TEST_F(HttpServerTest, WritesTheHandlersAnswerWithItsLengthThenEndsTheConnection) {
    server_.get("/json", [](const HttpRequest&, HttpResponse& response) {
        response.content_type = "application/json";
        response.headers.emplace_back("X-Answered-By", "test");
        response.body = "{}";
    });
    start();
    RawHttpConnection connection = connect();
    connection.send("GET /json HTTP/1.1\r\n\r\n");
    EXPECT_EQ(connection.read_to_end(),
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
              "Connection: close\r\nX-Answered-By: test\r\n\r\n{}");
}

TEST_F(HttpServerTest, TakesHttp10AndLinesEndedByANewlineAlone) {
    server_.get("/x", answering("ok\n"));
    start();
    const RawHttpResponse response = exchange("GET /x HTTP/1.0\nHost: here\n\n");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, "ok\n");
}

TEST_F(HttpServerTest, AnswersHeadWithTheHeadOfAGetAndNoBody) {
    server_.get("/x", answering("hello\n"));
    start();
    const auto answer_to = [&](std::string_view request) {
        RawHttpConnection connection = connect();
        connection.send(request);
        return connection.read_to_end();
    };
    const std::string whole = answer_to("GET /x HTTP/1.1\r\n\r\n");
    EXPECT_EQ(answer_to("HEAD /x HTTP/1.1\r\n\r\n"), whole.substr(0, whole.size() - std::strlen("hello\n")));

    const RawHttpResponse not_found = exchange("HEAD /nothing HTTP/1.1\r\n\r\n");
    EXPECT_EQ(not_found.status, 404);
    EXPECT_NE(not_found.header("Content-Length"), "0");
    EXPECT_EQ(not_found.body, "");
}

TEST_F(HttpServerTest, RefusesOtherMethodsWith405SayingWhichItServes) {
    RecordedRequest recorded;
    server_.get("/x", recorded.handler());
    start();
    for (const std::string method : {"POST", "PUT", "DELETE", "OPTIONS", "get"}) {
        const RawHttpResponse response = exchange(method + " /x HTTP/1.1\r\n\r\n");
        EXPECT_EQ(response.status, 405) << method;
        EXPECT_EQ(response.reason, "Method Not Allowed");
        EXPECT_EQ(response.header("Allow"), "GET, HEAD");
        EXPECT_EQ(response.body, method + " is not served; only GET and HEAD\n");
    }
    EXPECT_FALSE(recorded.request());
}

TEST_F(HttpServerTest, RefusesARequestWithABodyWith413AndStillGetsTheAnswerThrough) {
    server_.get("/x", answering("ok\n"));
    start();
    for (const std::string with_body :
         {"GET /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
          "GET /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}) {
        const RawHttpResponse response = exchange(with_body);
        EXPECT_EQ(response.status, 413) << with_body;
        EXPECT_EQ(response.reason, "Content Too Large");
        EXPECT_EQ(response.body, "a GET request has no body here\n");
    }
    EXPECT_EQ(exchange("GET /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n").status, 200);
}

struct MalformedHead {
    const char* name;
    std::string head;
    std::string why;
};

void PrintTo(const MalformedHead& malformed, std::ostream* out) { *out << malformed.name; }

class HttpServerMalformedHeadTest : public HttpServerTest, public ::testing::WithParamInterface<MalformedHead> {};

TEST_P(HttpServerMalformedHeadTest, IsAnsweredWith400AndWhy) {
    RecordedRequest recorded;
    server_.get("/x", recorded.handler());
    start();
    const RawHttpResponse response = exchange(GetParam().head);
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(response.reason, "Bad Request");
    EXPECT_EQ(response.body, GetParam().why + "\n");
    EXPECT_FALSE(recorded.request());
}

INSTANTIATE_TEST_SUITE_P(
    HttpServer, HttpServerMalformedHeadTest,
    ::testing::Values(
        MalformedHead{"NoVersion", "GET /x\r\n\r\n", "not an HTTP/1.x request line"},
        MalformedHead{"OtherProtocol", "GET /x SPDY/3\r\n\r\n", "not an HTTP/1.x request line"},
        MalformedHead{"MethodAlone", "GET\r\n\r\n", "not an HTTP/1.x request line"},
        MalformedHead{"NoRequestLine", "\r\n\r\n", "not an HTTP/1.x request line"},
        MalformedHead{"AbsoluteTarget", "GET http://here/x HTTP/1.1\r\n\r\n", "the request target must be a path"},
        MalformedHead{"AsteriskTarget", "GET * HTTP/1.1\r\n\r\n", "the request target must be a path"},
        MalformedHead{"BadEscapeInPath", "GET /x%zz HTTP/1.1\r\n\r\n", "a broken %-escape in the path"},
        MalformedHead{"CutEscapeInPath", "GET /x%4 HTTP/1.1\r\n\r\n", "a broken %-escape in the path"},
        MalformedHead{"BadEscapeInQueryName", "GET /x?%G1=1 HTTP/1.1\r\n\r\n", "a broken %-escape in the query"},
        MalformedHead{"CutEscapeInQueryValue", "GET /x?a=%2 HTTP/1.1\r\n\r\n", "a broken %-escape in the query"},
        MalformedHead{"HeaderWithoutColon", "GET /x HTTP/1.1\r\nno colon\r\n\r\n", "a header line without a name"},
        MalformedHead{"HeaderWithoutName", "GET /x HTTP/1.1\r\n: value\r\n\r\n", "a header line without a name"}),
    [](const ::testing::TestParamInfo<MalformedHead>& param_info) { return std::string(param_info.param.name); });

TEST_F(HttpServerTest, AnswersAPathItDoesNotServeWith404ListingThoseItDoes) {
    server_.get("/b", answering("b\n"));
    server_.get("/a", answering("a\n"));
    start();
    const RawHttpResponse response = exchange("GET /c?x=1 HTTP/1.1\r\n\r\n");
    EXPECT_EQ(response.status, 404);
    EXPECT_EQ(response.reason, "Not Found");
    EXPECT_EQ(response.body, "no such path: /c (served: /a, /b)\n");
    EXPECT_EQ(exchange("GET /a/ HTTP/1.1\r\n\r\n").status, 404);  // paths match exactly
}

TEST_F(HttpServerTest, AnswersWhatAHandlerThrowsWith500AndItsMessageAlone) {
    server_.get("/x", [](const HttpRequest&, HttpResponse& response) {
        response.content_type = "application/json";
        response.headers.emplace_back("X-Half-Done", "yes");
        response.body = "{";
        throw std::runtime_error("the handler failed");
    });
    start();
    const RawHttpResponse response = exchange("GET /x HTTP/1.1\r\n\r\n");
    EXPECT_EQ(response.status, 500);
    EXPECT_EQ(response.reason, "Internal Server Error");
    EXPECT_EQ(response.header("Content-Type"), "text/plain; charset=utf-8");
    EXPECT_FALSE(response.has_header("X-Half-Done"));
    EXPECT_EQ(response.body, "the handler failed\n");
}

TEST_F(HttpServerTest, TakesAHeadOfItsLimitAndRefusesOneByteMoreWith431WithoutWaitingForItsEnd) {
    server_.get("/x", answering("ok\n"));
    start();
    EXPECT_EQ(exchange(head_of_size(HttpServer::kMaxRequestHead)).status, 200);
    const std::string why = "the request head is over " + std::to_string(HttpServer::kMaxRequestHead) + " bytes\n";
    const RawHttpResponse over = exchange(head_of_size(HttpServer::kMaxRequestHead + 1));
    EXPECT_EQ(over.status, 431);
    EXPECT_EQ(over.reason, "Request Header Fields Too Large");
    EXPECT_EQ(over.body, why);

    // A head that has not ended yet is refused once it is too large, not at its deadline.
    const Clock::time_point sent = Clock::now();
    RawHttpConnection endless = connect();
    endless.send("GET /x HTTP/1.1\r\nX-Padding: " + std::string(HttpServer::kMaxRequestHead, 'p'));
    const RawHttpResponse refused = endless.response();
    EXPECT_EQ(refused.status, 431);
    EXPECT_EQ(refused.body, why);
    EXPECT_LT(Clock::now() - sent, std::chrono::seconds(HttpServer::kRequestHeadSeconds));
}

TEST_F(HttpServerTest, RefusesAHeadTheClientEndedHalfwayWith400) {
    server_.get("/x", answering("ok\n"));
    start();
    RawHttpConnection connection = connect();
    connection.send("GET /x HTTP/1.1\r\nHost: here\r\n");
    connection.finish_sending();
    const RawHttpResponse response = connection.response();
    EXPECT_EQ(response.status, 400);
    EXPECT_EQ(response.body, "the request ended before its head did\n");
}

TEST_F(HttpServerTest, AnswersAHeadNotWholeWithinItsDeadlineWith408AndOthersMeanwhile) {
    server_.get("/x", answering("ok\n"));
    start();
    const Clock::time_point connected = Clock::now();
    RawHttpConnection silent = connect();
    RawHttpConnection trickling = connect();
    trickling.send("GET /x HTTP/1.1\r\nHost: ");
    EXPECT_EQ(exchange("GET /x HTTP/1.1\r\n\r\n").status, 200);
    EXPECT_LT(Clock::now() - connected, std::chrono::seconds(HttpServer::kRequestHeadSeconds));
    for (RawHttpConnection* late : {&silent, &trickling}) {
        const RawHttpResponse response = late->response();
        EXPECT_EQ(response.status, 408);
        EXPECT_EQ(response.reason, "Request Timeout");
        EXPECT_EQ(response.body, "the request head did not come whole within " +
                                     std::to_string(HttpServer::kRequestHeadSeconds) + " seconds\n");
    }
    EXPECT_GE(Clock::now() - connected, std::chrono::seconds(HttpServer::kRequestHeadSeconds));
}

TEST_F(HttpServerTest, PastItsPendingLimitTheOldestClientSendingAHeadMakesRoom) {
    // Both ends of every connection are in this process.
    const rlim_t needed = 2 * (HttpServer::kMaxPending + 1) + 64;
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    if (files.rlim_cur < needed) {
        files.rlim_cur = std::min(needed, files.rlim_max);
        setrlimit(RLIMIT_NOFILE, &files);
    }
    if (files.rlim_cur < needed)
        GTEST_SKIP() << "the test needs " << needed << " descriptors; the limit is " << files.rlim_max;
    server_.get("/x", answering("ok\n"));
    start();
    std::vector<std::unique_ptr<RawHttpConnection>> pending;
    for (std::size_t i = 0; i <= HttpServer::kMaxPending; ++i)
        pending.push_back(std::make_unique<RawHttpConnection>(host_, running_->port()));
    const RawHttpResponse oldest = pending.front()->response();
    EXPECT_EQ(oldest.status, 408);
    EXPECT_EQ(oldest.body, "the server had more clients sending requests than it holds\n");
    for (const std::size_t held : {std::size_t{1}, HttpServer::kMaxPending}) {
        pending[held]->send("GET /x HTTP/1.1\r\n\r\n");
        EXPECT_EQ(pending[held]->response().status, 200) << "connection " << held;
    }
}

TEST_F(HttpServerTest, PastItsWaitingLimitARequestIsRefusedWith503AtOnce) {
    server_.get("/held", [this](const HttpRequest&, HttpResponse& response) {
        gate_.pass();
        response.body = "ok\n";
    });
    start();
    std::vector<std::unique_ptr<RawHttpConnection>> answered;
    const auto send_held = [&] {
        answered.push_back(std::make_unique<RawHttpConnection>(host_, running_->port()));
        answered.back()->send("GET /held HTTP/1.1\r\n\r\n");
    };
    for (std::size_t i = 0; i < HttpServer::kWorkers; ++i) send_held();
    ASSERT_TRUE(gate_.wait_until_holding(HttpServer::kWorkers));
    for (std::size_t i = 0; i < HttpServer::kMaxWaiting; ++i) send_held();
    // Answered while every worker is still held.
    const RawHttpResponse refused = exchange("GET /held HTTP/1.1\r\n\r\n");
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(refused.reason, "Service Unavailable");
    EXPECT_EQ(refused.body, "too many requests waiting; try again\n");
    gate_.open();
    // Each closed once answered, as a client does: a worker waits for that before it takes the
    // next request.
    for (auto& connection : answered) {
        EXPECT_EQ(connection->response().status, 200);
        connection.reset();
    }
}

TEST_F(HttpServerTest, DropsAClientThatTakesNoPartOfItsAnswerSoThatItHoldsNoWorker) {
    server_.get("/big", [this](const HttpRequest&, HttpResponse& response) {
        gate_.pass();
        response.content_type = "application/octet-stream";
        response.body.assign(kUnbufferedAnswerBytes, 'x');
    });
    server_.get("/small", answering("ok\n"));
    start();
    std::vector<std::unique_ptr<RawHttpConnection>> stalled;
    for (std::size_t i = 0; i < HttpServer::kWorkers; ++i) {
        stalled.push_back(std::make_unique<RawHttpConnection>(host_, running_->port()));
        stalled.back()->send("GET /big HTTP/1.1\r\n\r\n");
    }
    ASSERT_TRUE(gate_.wait_until_holding(HttpServer::kWorkers));
    RawHttpConnection waiting = connect();
    waiting.send("GET /small HTTP/1.1\r\n\r\n");
    // The workers start sending now, and cannot give up on a client before its timeout.
    const Clock::time_point sending = Clock::now();
    gate_.open();
    EXPECT_EQ(waiting.response().status, 200);
    EXPECT_GE(Clock::now() - sending, std::chrono::seconds(HttpServer::kSendTimeoutSeconds));
    for (const auto& connection : stalled) {
        const std::string got = connection->read_to_end();
        EXPECT_TRUE(got.starts_with("HTTP/1.1 200 OK\r\n"));
        EXPECT_LT(got.size(), kUnbufferedAnswerBytes);
    }
}

TEST_F(HttpServerTest, StopsAtOnceWhileAClientStallsItsAnswer) {
    server_.get("/big", [](const HttpRequest&, HttpResponse& response) {
        response.content_type = "application/octet-stream";
        response.body.assign(kUnbufferedAnswerBytes, 'x');
    });
    start();
    RawHttpConnection stalled = connect();
    stalled.send("GET /big HTTP/1.1\r\n\r\n");
    ASSERT_EQ(stalled.read(std::strlen("HTTP/1.1 200 OK")), "HTTP/1.1 200 OK");
    const Clock::time_point stopping = Clock::now();
    running_.reset();
    EXPECT_LT(Clock::now() - stopping, std::chrono::seconds(HttpServer::kSendTimeoutSeconds));
}

TEST(HttpServerStop, BeforeRunMakesRunReturnAtOnce) {
    HttpServer server;
    server.listen("127.0.0.1", 0);
    server.stop();
    server.run();
}

TEST_F(HttpServerTest, GzipsTextJsonAndMetricsOfAKibibyteOrMoreForAClientThatAcceptsGzip) {
    const std::string kibibyte(1024, 'k');
    server_.get("/text", answering(kibibyte));
    server_.get("/json", answering(kibibyte, "application/json"));
    server_.get("/metrics", answering(kibibyte, "application/openmetrics-text; version=1.0.0"));
    server_.get("/binary", answering(kibibyte, "application/octet-stream"));
    server_.get("/short", answering(kibibyte.substr(1)));
    start();
    const auto get = [&](const std::string& path, const std::string& accept_encoding) {
        return exchange("GET " + path + " HTTP/1.1\r\nAccept-Encoding: " + accept_encoding + "\r\n\r\n");
    };
    for (const std::string path : {"/text", "/json", "/metrics"}) {
        for (const std::string accepted : {"gzip", "deflate, GZIP;q=0.5", "*"}) {
            const RawHttpResponse response = get(path, accepted);
            EXPECT_EQ(response.header("Content-Encoding"), "gzip") << path << ", " << accepted;
            EXPECT_EQ(response.header("Vary"), "Accept-Encoding");
            EXPECT_EQ(response.header("Content-Length"), std::to_string(response.body.size()));
            EXPECT_EQ(gunzip(response.body), kibibyte);
        }
    }
    const std::vector<std::pair<std::string, std::string>> plain = {{"/text", "gzip;q=0"}, {"/text", "deflate"},
                                                                    {"/text", "identity"}, {"/text", ""},
                                                                    {"/binary", "gzip"},   {"/short", "gzip"}};
    for (const auto& [path, accepted] : plain) {
        const RawHttpResponse response = get(path, accepted);
        EXPECT_FALSE(response.has_header("Content-Encoding")) << path << ", " << accepted;
        EXPECT_EQ(response.body, path == "/short" ? kibibyte.substr(1) : kibibyte);
    }
}

TEST_F(HttpServerTest, ServesOverIpv6Loopback) {
    server_.get("/x", answering("ok\n"));
    try {
        start("::1");
    } catch (const std::runtime_error& error) {
        GTEST_SKIP() << "no IPv6 loopback here: " << error.what();
    }
    const RawHttpResponse response = exchange("GET /x HTTP/1.1\r\n\r\n");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, "ok\n");
}

TEST(HttpServerListen, TakesANumericAddressAndSaysWhyItCannotListen) {
    HttpServer server;
    try {
        server.listen("localhost", 0);
        ADD_FAILURE() << "listened on a name";
    } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "localhost is not a numeric address");
    }
    HttpServer first;
    const int port = first.listen("127.0.0.1", 0);
    EXPECT_GT(port, 0);
    HttpServer second;
    try {
        second.listen("127.0.0.1", port);
        ADD_FAILURE() << "two servers listen on port " << port;
    } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), std::strerror(EADDRINUSE));
    }
}

TEST(WeightedItems, GivesEachItemInLowerCaseWithItsQuality) {
    using Weighted = std::vector<std::pair<std::string, double>>;
    EXPECT_EQ(weighted_items("text/plain;q=0.5, Gzip"), (Weighted{{"text/plain", 0.5}, {"gzip", 1}}));
    EXPECT_EQ(weighted_items("a; level=1; q=0 ,, ;q=1, b ; Q=0.2"),
              (Weighted{{"a", 0}, {"b", 1}}));  // a parameter named Q is not q
    EXPECT_EQ(weighted_items(""), Weighted{});
}

}  // namespace
}  // namespace leakwrap
