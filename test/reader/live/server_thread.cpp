#include "server_thread.h"

namespace leakwrap::testing {

ServerThread::ServerThread(HttpServer& server, const std::string& host)
    : server_(server), port_(server.listen(host, 0)), thread_([this] { server_.run(); }) {}

ServerThread::~ServerThread() {
    server_.stop();
    thread_.join();
}

}  // namespace leakwrap::testing
