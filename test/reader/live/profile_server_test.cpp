// serve's routes on a real server over loopback: the queries they take, and the status and
// reason of each refusal. What they answer for a profiled process is test/ecosystem's serve_test,
// which runs one.
#include "profile_server.h"
#include "raw_http_connection.h"
#include "server_thread.h"
#include "socket_addresses.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace leakwrap {
namespace {

using testing::ServerThread;

// No process has it: far above any pid_max.
constexpr pid_t kAbsentPid = 2147483000;

class ProfileServerTest : public ::testing::Test {
protected:
    void start(const std::string& host = "127.0.0.1") {
        add_profile_routes(server_, options_);
        running_.emplace(server_, host);
        host_ = host;
    }

    RawHttpResponse get(const std::string& target) {
        return http_exchange(running_->port(), "GET " + target + " HTTP/1.1\r\n\r\n", host_);
    }

    void expect_refusal(const std::string& target, int status, const std::string& why) {
        const RawHttpResponse response = get(target);
        EXPECT_EQ(response.status, status) << target;
        EXPECT_EQ(response.header("Content-Type"), "text/plain; charset=utf-8") << target;
        EXPECT_EQ(response.body, why + "\n") << target;
    }

    ServeOptions options_;
    HttpServer server_;
    std::optional<ServerThread> running_;
    std::string host_;
};

TEST_F(ProfileServerTest, HeapAsksForThePidWhenItIsNotGiven) {
    start();
    expect_refusal("/debug/pprof/heap", 400, "give the process as ?pid=N (GET /processes lists them)");
    expect_refusal("/debug/pprof/heap?children=1", 400, "give the process as ?pid=N (GET /processes lists them)");
}

TEST_F(ProfileServerTest, HeapTakesOnlyAWholePidInRange) {
    start();
    const std::string why = "pid must be a whole number from 1 to " + std::to_string(INT_MAX);
    for (const std::string pid :
         {"", "abc", "0", "-5", "12x", "1.5", "0x10", "+1", "%201", "2147483648", "99999999999999999999"})
        expect_refusal("/debug/pprof/heap?pid=" + pid, 400, why);
}

TEST_F(ProfileServerTest, HeapTakesBirthWindowsAsDurationsBeforeAnythingElse) {
    start();
    for (const std::string name : {"born_after", "born_before"})
        for (const std::string duration : {"soon", "5", "1.5s", "-1s", "0s", "5S", ""})
            // Checked first: a bad pid, or none, comes second.
            expect_refusal("/debug/pprof/heap?pid=x&" + name + "=" + duration, 400,
                           name + " must be a duration like 500ms, 5s, 2m or 1h, not " + duration);
}

TEST_F(ProfileServerTest, HeapSaysWhenAProcessHasNoSegmentOrDoesNotExist) {
    if (std::filesystem::exists("/dev/shm/leakwrap." + std::to_string(getpid())))
        GTEST_SKIP() << "a segment left by an earlier process has this test's pid";
    start();
    const std::string self = std::to_string(getpid());
    expect_refusal("/debug/pprof/heap?pid=" + self, 404, "process " + self + " has no leakwrap segment");
    expect_refusal("/debug/pprof/heap?pid=" + self + "&born_after=5s&children=1", 404,
                   "process " + self + " has no leakwrap segment");
    const std::string absent = std::to_string(kAbsentPid);
    expect_refusal("/debug/pprof/heap?pid=" + absent, 404, "no process " + absent + " and no leakwrap segment of it");
}

TEST_F(ProfileServerTest, ProcessesListsTheSegmentsAsAJsonArray) {
    start();
    const RawHttpResponse response = get("/processes");
    ASSERT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(response.header("Content-Type"), "application/json");
    const nlohmann::json list = nlohmann::json::parse(response.body);
    ASSERT_TRUE(list.is_array());
    for (const nlohmann::json& process : list) {
        EXPECT_TRUE(process.contains("pid")) << process;
        EXPECT_TRUE(process.contains("state")) << process;
    }
}

TEST_F(ProfileServerTest, RefusesEveryRouteToAClientBeyondLoopbackUnlessAllUsers) {
    const std::optional<std::string> address = non_loopback_ipv4_address();
    if (!address) GTEST_SKIP() << "this host has no address beyond loopback";
    start(*address);
    for (const std::string target : {"/metrics", "/debug/pprof/heap?pid=1", "/processes"})
        expect_refusal(target, 403,
                       "serve tells which user a client is on loopback only; --all-users serves "
                       "every client every segment");
}

TEST_F(ProfileServerTest, AllUsersServesAClientBeyondLoopback) {
    const std::optional<std::string> address = non_loopback_ipv4_address();
    if (!address) GTEST_SKIP() << "this host has no address beyond loopback";
    options_.all_users = true;
    start(*address);
    EXPECT_EQ(get("/processes").status, 200);
    expect_refusal("/debug/pprof/heap?pid=" + std::to_string(kAbsentPid), 404,
                   "no process " + std::to_string(kAbsentPid) + " and no leakwrap segment of it");
}

TEST(ListenAddress, TakesANumericAddressAndAPortAndKnowsLoopback) {
    struct Case {
        std::string text, host;
        int port;
        bool loopback;
    };
    for (const Case& expected :
         {Case{"127.0.0.1:9464", "127.0.0.1", 9464, true}, Case{"127.8.9.10:0", "127.8.9.10", 0, true},
          Case{"0.0.0.0:65535", "0.0.0.0", 65535, false}, Case{"[::1]:9464", "::1", 9464, true},
          Case{"[::]:80", "::", 80, false}}) {
        const ListenAddress address = parse_listen_address(expected.text);
        EXPECT_EQ(address.host, expected.host) << expected.text;
        EXPECT_EQ(address.port, expected.port) << expected.text;
        EXPECT_EQ(address.loopback, expected.loopback) << expected.text;
        EXPECT_EQ(address.text(), expected.text);
    }
}

TEST(ListenAddress, SaysWhatIsWrongWithAnAddressAndHowToGiveIt) {
    const std::string how = " (give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)";
    const std::string bad_port = "the port must be a number from 0 to 65535";
    const std::string bad_address = "not a numeric IPv4 address or a bracketed IPv6 address";
    for (const auto& [text, why] : {std::pair<std::string, std::string>{"9464", "no port"},
                                    {"127.0.0.1:", bad_port},
                                    {"127.0.0.1:65536", bad_port},
                                    {"127.0.0.1:-1", bad_port},
                                    {"127.0.0.1:80x", bad_port},
                                    {"localhost:80", bad_address},
                                    {"::1:80", bad_address},
                                    {"[127.0.0.1]:80", bad_address},
                                    {":80", bad_address}}) {
        try {
            parse_listen_address(text);
            ADD_FAILURE() << text << " was taken";
        } catch (const std::invalid_argument& error) {
            EXPECT_EQ(error.what(), "--listen " + text + ": " + why + how);
        }
    }
}

TEST(AcceptsOpenMetrics, WhenTheAcceptHeaderRanksItAtLeastAsHighAsPlainText) {
    EXPECT_TRUE(accepts_openmetrics("application/openmetrics-text; version=1.0.0"));
    EXPECT_TRUE(accepts_openmetrics("application/openmetrics-text;q=0.5, text/plain;q=0.5"));
    EXPECT_TRUE(accepts_openmetrics("text/plain;q=0.4, Application/OpenMetrics-Text;q=0.5"));
    EXPECT_FALSE(accepts_openmetrics("application/openmetrics-text;q=0.5, text/plain"));
    EXPECT_FALSE(accepts_openmetrics("application/openmetrics-text;q=0.5, */*"));
    EXPECT_FALSE(accepts_openmetrics("application/openmetrics-text;q=0, text/plain;q=0"));
    EXPECT_FALSE(accepts_openmetrics("*/*"));
    EXPECT_FALSE(accepts_openmetrics(""));
}

}  // namespace
}  // namespace leakwrap
