// Who is at the other end of a loopback TCP connection: the user owning the client's socket,
// as the kernel lists it in /proc/net/tcp or tcp6 (the row whose local end is the client's
// address and port and whose remote end is ours). Loopback is no privilege boundary: `serve`
// asks this of every request, so that it gives no client more than that client's user could
// read with leakwrap-report itself.
#pragma once

#include <sys/types.h>

#include <optional>

namespace leakwrap {

// The client's uid; none for a peer that is not on a loopback address, or whose socket is not
// listed (it closed meanwhile, or lives in another network namespace).
std::optional<uid_t> loopback_peer_uid(int connection);

}  // namespace leakwrap
