#include "terminal_screen.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace leakwrap {
namespace {

constexpr const char* kEnter = "\x1b[?1049h\x1b[?25l";  // alternate screen, cursor hidden
constexpr const char* kLeave = "\x1b[?25h\x1b[?1049l";  // cursor shown, main screen back

sigset_t stop_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) sigaddset(&signals, signal);
    return signals;
}

}  // namespace

TerminalScreen::TerminalScreen(int input, int output) : input_(input), output_(output) {
    const sigset_t signals = stop_signals();
    pthread_sigmask(SIG_BLOCK, &signals, &previous_mask_);
    signal_fd_ = signalfd(-1, &signals, SFD_CLOEXEC);
    if (signal_fd_ < 0) {
        pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
        throw std::runtime_error(std::string("cannot take signals: ") + std::strerror(errno));
    }
    if (isatty(input_) && tcgetattr(input_, &saved_) == 0) {
        termios raw = saved_;
        // Keys as they are typed, not echoed. ISIG stays: Ctrl-C is SIGINT, which arrives here.
        raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        keys_ = tcsetattr(input_, TCSANOW, &raw) == 0;
    }
    write_all(kEnter);
}

TerminalScreen::~TerminalScreen() {
    write_all(kLeave);
    if (keys_) tcsetattr(input_, TCSANOW, &saved_);
    // A stop signal that came meanwhile was answered by stopping: take it, or restoring the mask
    // would deliver it and kill the process on its way out.
    const sigset_t signals = stop_signals();
    const timespec no_wait{};
    while (sigtimedwait(&signals, nullptr, &no_wait) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    ::close(signal_fd_);
}

TerminalScreen::Size TerminalScreen::size() const {
    winsize window{};
    if (ioctl(output_, TIOCGWINSZ, &window) != 0 || window.ws_col == 0 || window.ws_row == 0) return {};
    return {window.ws_col, window.ws_row};
}

void TerminalScreen::draw(const std::vector<std::string>& lines) {
    // From the top left, each line cleared to its end, then everything below the last: the
    // screen changes in place, without the flicker of clearing it first.
    std::string frame = "\x1b[H";
    for (std::size_t i = 0; i < lines.size(); ++i) frame += lines[i] + "\x1b[K" + (i + 1 < lines.size() ? "\r\n" : "");
    frame += "\x1b[J";
    write_all(frame);
}

TerminalScreen::Event TerminalScreen::next_event(std::chrono::milliseconds wait) {
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {input_, POLLIN, 0}};
    const int ready = poll(fds, keys_ ? 2 : 1, static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) return {};
    if (fds[0].revents & POLLIN) {
        signalfd_siginfo info{};
        if (read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info)))
            return {static_cast<int>(info.ssi_signo) == SIGWINCH ? Event::Kind::resize : Event::Kind::stop, 0};
        return {};
    }
    if (keys_ && fds[1].revents != 0) {
        char key = 0;
        const ssize_t got = read(input_, &key, 1);
        // The terminal went away (EOF, an error): nothing can be shown or asked any more.
        if (got <= 0) return {Event::Kind::stop, 0};
        return {Event::Kind::key, key};
    }
    return {};
}

void TerminalScreen::write_all(const std::string& text) {
    for (std::size_t written = 0; written < text.size();) {
        const ssize_t n = ::write(output_, text.data() + written, text.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the terminal is gone; nothing left to show it
        written += static_cast<std::size_t>(n);
    }
}

}  // namespace leakwrap
