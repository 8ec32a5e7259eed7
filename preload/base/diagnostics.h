// One-line warnings on stderr. write(2) on a stack buffer: no stdio locks, nothing that could
// deadlock or recurse when called from inside malloc.
#pragma once

namespace leakwrap {

// printf-style; the line is prefixed with "leakwrap[<pid>]: " and ended with a newline.
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace leakwrap
