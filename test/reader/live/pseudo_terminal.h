// A pseudo-terminal of a fixed size for the tests of the terminal screen: the screen is given the
// terminal's side, and the test plays the terminal emulator on the other side, reading what was
// drawn and typing keys.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace leakwrap::testing {

class PseudoTerminal {
public:
    // Its output is passed on unchanged (no OPOST, which would turn "\n" into "\r\n"), so that a
    // test compares exactly the bytes a program wrote.
    PseudoTerminal(unsigned short columns, unsigned short lines);
    ~PseudoTerminal();
    PseudoTerminal(const PseudoTerminal&) = delete;
    PseudoTerminal& operator=(const PseudoTerminal&) = delete;

    // The side a program draws on and reads keys from.
    int terminal() const { return terminal_; }

    // `count` bytes of what the program wrote; fails the test with std::runtime_error if they do
    // not come.
    std::string read_drawn(std::size_t count);
    // Whatever the program wrote and the test has not read, after a short wait.
    std::string read_rest();

    void type(std::string_view keys);
    // The emulator goes away, as when its window is closed.
    void hang_up();

private:
    int emulator_ = -1;
    int terminal_ = -1;
};

}  // namespace leakwrap::testing
