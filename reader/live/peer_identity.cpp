#include "peer_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace leakwrap {
namespace {

// An address as /proc/net/tcp{,6} writes it: the address's 32-bit words each in host order, in
// hex, then ":" and the port in hex ("0100007F:1F90" for 127.0.0.1:8080 on x86).
std::string proc_net_address(const sockaddr_storage& address) {
    char text[64];
    if (address.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
        std::snprintf(text, sizeof text, "%08X:%04X", v4->sin_addr.s_addr, ntohs(v4->sin_port));
        return text;
    }
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    uint32_t words[4];
    std::memcpy(words, &v6->sin6_addr, sizeof words);
    std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", words[0], words[1], words[2], words[3],
                  ntohs(v6->sin6_port));
    return text;
}

bool on_loopback(const sockaddr_storage& address) {
    if (address.ss_family == AF_INET)
        return (ntohl(reinterpret_cast<const sockaddr_in*>(&address)->sin_addr.s_addr) >> 24) == 127;
    if (address.ss_family != AF_INET6) return false;
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

// An IPv4-mapped IPv6 address (a dual-stack listener's IPv4 peer) as the IPv4 address it is: the
// client's socket is an IPv4 one, listed in /proc/net/tcp under that.
void unmap_ipv4(sockaddr_storage& address) {
    if (address.ss_family != AF_INET6) return;
    const auto v6 = *reinterpret_cast<const sockaddr_in6*>(&address);
    if (!IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) return;
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = v6.sin6_port;
    std::memcpy(&v4.sin_addr, &v6.sin6_addr.s6_addr[12], sizeof v4.sin_addr);
    address = {};
    std::memcpy(&address, &v4, sizeof v4);
}

}  // namespace

std::optional<uid_t> loopback_peer_uid(int connection) {
    sockaddr_storage peer{}, ours{};
    socklen_t peer_length = sizeof peer, our_length = sizeof ours;
    if (getpeername(connection, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0 ||
        getsockname(connection, reinterpret_cast<sockaddr*>(&ours), &our_length) != 0 || !on_loopback(peer))
        return std::nullopt;
    unmap_ipv4(peer);
    unmap_ipv4(ours);
    const std::string client = proc_net_address(peer), server = proc_net_address(ours);
    std::ifstream table(peer.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6");
    std::string line;
    std::getline(table, line);  // the column names
    // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode"
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits;
        uid_t uid = 0;
        if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) continue;
        if (local == client && remote == server) return uid;
    }
    return std::nullopt;
}

}  // namespace leakwrap
