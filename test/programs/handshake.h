// The target programs' half of the protocol the e2e harness drives: a program does its work,
// says READY, and stays alive (so its segment can be read) until the harness sends one line.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

inline void announce_ready_and_wait_for_release() {
    std::fputs("READY\n", stdout);
    std::fflush(stdout);
    // read(2), not stdio: stdio would allocate stdin's buffer after READY, racing the snapshot.
    // EOF counts as a release too: a harness that closes our stdin wants us gone.
    char byte;
    while (read(STDIN_FILENO, &byte, 1) == 1 && byte != '\n') {
    }
}

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    std::exit(1);
}
