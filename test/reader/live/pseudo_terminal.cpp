#include "pseudo_terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace leakwrap::testing {
namespace {

std::runtime_error system_error(const std::string& what) {
    return std::runtime_error(what + ": " + std::strerror(errno));
}

// How long what a program wrote may take to reach the emulator's side before a test fails.
constexpr int kDrawnWaitMs = 10'000;
// How long the emulator's side stays quiet before a test takes it that nothing more is coming.
constexpr int kQuietMs = 200;

// Reads what is there within `wait_ms`; "" if nothing comes.
std::string read_within(int descriptor, int wait_ms, std::size_t at_most) {
    pollfd ready{descriptor, POLLIN, 0};
    if (poll(&ready, 1, wait_ms) <= 0 || (ready.revents & POLLIN) == 0) return "";
    std::string bytes(at_most, '\0');
    const ssize_t got = read(descriptor, bytes.data(), bytes.size());
    bytes.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return bytes;
}

}  // namespace

PseudoTerminal::PseudoTerminal(unsigned short columns, unsigned short lines) {
    emulator_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (emulator_ < 0) throw system_error("posix_openpt");
    if (grantpt(emulator_) != 0 || unlockpt(emulator_) != 0) throw system_error("grantpt");
    terminal_ = open(ptsname(emulator_), O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (terminal_ < 0) throw system_error("open the terminal side");
    termios mode{};
    tcgetattr(terminal_, &mode);
    mode.c_oflag &= static_cast<tcflag_t>(~OPOST);
    tcsetattr(terminal_, TCSANOW, &mode);
    const winsize size{lines, columns, 0, 0};
    ioctl(emulator_, TIOCSWINSZ, &size);
}

PseudoTerminal::~PseudoTerminal() {
    close(terminal_);
    if (emulator_ >= 0) close(emulator_);
}

std::string PseudoTerminal::read_drawn(std::size_t count) {
    std::string drawn;
    while (drawn.size() < count) {
        const std::string more = read_within(emulator_, kDrawnWaitMs, count - drawn.size());
        if (more.empty())
            throw std::runtime_error("the terminal got " + std::to_string(drawn.size()) + " of " +
                                     std::to_string(count) + " bytes: " + drawn);
        drawn += more;
    }
    return drawn;
}

std::string PseudoTerminal::read_rest() {
    std::string rest;
    for (std::string more; !(more = read_within(emulator_, kQuietMs, 4096)).empty();) rest += more;
    return rest;
}

void PseudoTerminal::type(std::string_view keys) {
    if (write(emulator_, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size()))
        throw system_error("type on the terminal");
}

void PseudoTerminal::hang_up() {
    close(emulator_);
    emulator_ = -1;
}

}  // namespace leakwrap::testing
