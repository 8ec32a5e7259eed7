// Which user is at the other end of a connection, asked of real connections: from this process
// over IPv4 and IPv6 loopback, from a child process of another user, and from beyond loopback.
#include "peer_identity.h"
#include "raw_http_connection.h"
#include "socket_addresses.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace leakwrap {
namespace {

// A socket listening on a numeric address, on a port the kernel picked, that hands the test the
// server's end of each connection.
class Listener {
public:
    explicit Listener(const std::string& host) {
        const SocketAddress any_port = numeric_address(host, 0);
        listening_ = socket(any_port.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listening_ < 0 || bind(listening_, any_port.get(), any_port.length) != 0 || listen(listening_, 4) != 0) {
            const int error = errno;
            if (listening_ >= 0) close(listening_);
            throw std::runtime_error("cannot listen on " + host + ": " + std::strerror(error));
        }
        address_.length = sizeof(address_.storage);
        getsockname(listening_, reinterpret_cast<sockaddr*>(&address_.storage), &address_.length);
    }
    ~Listener() {
        if (accepted_ >= 0) close(accepted_);
        close(listening_);
    }
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;

    const SocketAddress& address() const { return address_; }
    int port() const { return address_.port(); }

    // The server's end of the next connection, open as long as the listener.
    int accept_connection() {
        pollfd incoming{listening_, POLLIN, 0};
        if (poll(&incoming, 1, static_cast<int>(std::chrono::milliseconds(kAnswerPatience).count())) != 1)
            throw std::runtime_error("no connection came");
        if (accepted_ >= 0) close(accepted_);
        accepted_ = accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC);
        return accepted_;
    }

private:
    int listening_ = -1;
    int accepted_ = -1;
    SocketAddress address_;
};

TEST(LoopbackPeerUid, IsTheUserOfThisProcessForItsOwnClientOverIpv4AndIpv6Loopback) {
    for (const std::string host : {"127.0.0.1", "::1"}) {
        std::optional<Listener> listener;
        try {
            listener.emplace(host);
        } catch (const std::runtime_error& error) {
            ADD_FAILURE() << error.what();
            continue;
        }
        const RawHttpConnection client(host, listener->port());
        EXPECT_EQ(loopback_peer_uid(listener->accept_connection()), std::optional<uid_t>(getuid())) << host;
    }
}

// A server listening on [::] takes IPv4 clients too, as IPv4-mapped IPv6 peers; the client's
// socket is an IPv4 one, listed with those.
TEST(LoopbackPeerUid, IsTheUserOfAnIpv4ClientOfADualStackListener) {
    std::optional<Listener> listener;
    try {
        listener.emplace("::");
    } catch (const std::runtime_error& error) {
        GTEST_SKIP() << error.what();
    }
    const RawHttpConnection client("127.0.0.1", listener->port());
    EXPECT_EQ(loopback_peer_uid(listener->accept_connection()), std::optional<uid_t>(getuid()));
}

TEST(LoopbackPeerUid, IsTheUserOfTheClientsSocketNotTheServers) {
    if (geteuid() != 0) GTEST_SKIP() << "only root starts a client of another user";
    constexpr uid_t kNobody = 65534;
    Listener listener("127.0.0.1");
    int parent_done[2];
    ASSERT_EQ(pipe2(parent_done, O_CLOEXEC), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Only system calls in the child of a process with threads.
        close(parent_done[1]);
        if (setresgid(kNobody, kNobody, kNobody) != 0 || setresuid(kNobody, kNobody, kNobody) != 0) _exit(1);
        const int client = socket(listener.address().family(), SOCK_STREAM, 0);
        if (client < 0 || connect(client, listener.address().get(), listener.address().length) != 0) _exit(2);
        char ignored;
        while (read(parent_done[0], &ignored, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(parent_done[0]);
    std::optional<uid_t> uid;
    try {
        uid = loopback_peer_uid(listener.accept_connection());
    } catch (const std::runtime_error& error) {
        ADD_FAILURE() << error.what();
    }
    close(parent_done[1]);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's status: " << status;
    EXPECT_EQ(uid, std::optional<uid_t>(kNobody));
}

TEST(LoopbackPeerUid, IsNoneForAClientBeyondLoopback) {
    const std::optional<std::string> address = non_loopback_ipv4_address();
    if (!address) GTEST_SKIP() << "this host has no address beyond loopback";
    Listener listener(*address);
    const RawHttpConnection client(*address, listener.port());
    EXPECT_EQ(loopback_peer_uid(listener.accept_connection()), std::nullopt);
}

TEST(LoopbackPeerUid, IsNoneForASocketThatIsNotTcp) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    EXPECT_EQ(loopback_peer_uid(pair[0]), std::nullopt);
    close(pair[0]);
    close(pair[1]);
}

}  // namespace
}  // namespace leakwrap
