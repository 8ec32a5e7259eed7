// Prints what find_package(leakwrap) told the build: the layout version of the installed header
// and the library to preload, by target and by variable.
#include <leakwrap/segment_layout.h>

#include <cstdio>

int main() { std::printf("%u\n%s\n%s\n", leakwrap::layout::kLayoutVersion, PRELOAD_LIBRARY, PRELOAD_LIBRARY_VARIABLE); }
