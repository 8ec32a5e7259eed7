// leaky_sessions: a session registry that owns its sessions, and one leaked `new`.
//
// open_session allocates a 4096-byte Session with plain `new`; authorized sessions are handed to
// the registry (a std::unordered_map of std::unique_ptr, which frees them when the user logs
// out). Every eighth user is not authorized, and that path returns without deleting the session:
// with the default 400 logins, open_session ends up with 50 live blocks, 204800 bytes.
//
// Usage: leaky_sessions [LOGINS] [--wait-enter]
// After the logins it prints a "ready" line and waits, so it can be inspected live: until Enter
// with --wait-enter, otherwise until SIGINT or SIGTERM. Either way it then exits normally.
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

struct Session {
    std::uint64_t user_id;
    std::array<char, 4088> scratch;
};
static_assert(sizeof(Session) == 4096);

class SessionRegistry {
public:
    void adopt(std::unique_ptr<Session> session) { sessions_[session->user_id] = std::move(session); }
    void close(std::uint64_t user_id) { sessions_.erase(user_id); }
    std::size_t size() const { return sessions_.size(); }

private:
    std::unordered_map<std::uint64_t, std::unique_ptr<Session>> sessions_;
};

static bool is_authorized(std::uint64_t user_id) {
    return user_id % 8 != 0;
}

// Returns the new session, or nullptr if the user may not log in.
static Session* open_session(std::uint64_t user_id) {
    auto* session = new Session{user_id, {}};
    if (!is_authorized(user_id)) {
        return nullptr;  // the bug: session is never deleted on this path
    }
    return session;
}

static void wait_for_signal() {
    sigset_t blocked, previous;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    // Block first so a signal that arrives before sigsuspend cannot be missed.
    sigprocmask(SIG_BLOCK, &blocked, &previous);
    static volatile sig_atomic_t stop_requested = 0;
    struct sigaction action {};
    action.sa_handler = [](int) { stop_requested = 1; };
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    while (!stop_requested) sigsuspend(&previous);
}

int main(int argc, char** argv) {
    int logins = 400;
    bool wait_for_enter = false;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--wait-enter") {
            wait_for_enter = true;
        } else if ((logins = std::atoi(argv[i])) <= 0) {
            std::cerr << "usage: " << argv[0] << " [LOGINS] [--wait-enter]\n";
            return 2;
        }
    }

    SessionRegistry registry;
    int refused = 0;
    for (int user = 0; user < logins; ++user) {
        Session* session = open_session(static_cast<std::uint64_t>(user));
        if (session == nullptr) {
            ++refused;
            continue;
        }
        registry.adopt(std::unique_ptr<Session>(session));
        registry.close(static_cast<std::uint64_t>(user));  // the user logs out
    }

    std::cout << "leaky_sessions: " << logins << " logins (" << refused << " refused, " << registry.size()
              << " open); pid " << getpid() << " ready, waiting for "
              << (wait_for_enter ? "Enter" : "SIGINT/SIGTERM") << std::endl;
    if (wait_for_enter) {
        std::string line;
        std::getline(std::cin, line);
    } else {
        wait_for_signal();
    }
    return 0;
}
