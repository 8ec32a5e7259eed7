// Socket addresses for the tests: numeric ones as the server takes them, and one of this host
// beyond loopback, for the tests of a client that is not on loopback (a connection from this host
// to such an address has it at both ends, so the server sees a peer that is not on loopback
// without another machine).
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

namespace leakwrap {

struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;

    int family() const { return storage.ss_family; }
    int port() const;
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// A numeric IPv4 or IPv6 address and a port; throws std::runtime_error for anything else.
SocketAddress numeric_address(const std::string& host, int port);

// The first IPv4 address of an interface that is up and not loopback; none on a host without one.
std::optional<std::string> non_loopback_ipv4_address();

}  // namespace leakwrap
