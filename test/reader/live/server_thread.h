// An HttpServer serving on a thread of its own for the length of a test, on a port the kernel
// picked, so that tests run side by side.
#pragma once

#include "http_server.h"

#include <string>
#include <thread>

namespace leakwrap::testing {

class ServerThread {
public:
    // `server` has its routes. It is stopped, and the thread joined, when this goes.
    explicit ServerThread(HttpServer& server, const std::string& host = "127.0.0.1");
    ~ServerThread();
    ServerThread(const ServerThread&) = delete;
    ServerThread& operator=(const ServerThread&) = delete;

    int port() const { return port_; }

private:
    HttpServer& server_;
    int port_;
    std::thread thread_;
};

}  // namespace leakwrap::testing
