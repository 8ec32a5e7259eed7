#include "diagnostics.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "debug_check.h"
#include "os.h"

namespace leakwrap {

void warn(const char* format, ...) {
    int saved_errno = errno;
    char line[512];
    int used = std::snprintf(line, sizeof line, "leakwrap[%d]: ", static_cast<int>(getpid()));
    va_list args;
    va_start(args, format);
    int more = std::vsnprintf(line + used, sizeof line - used - 1, format, args);
    va_end(args);
    if (more < 0) more = 0;
    std::size_t length = static_cast<std::size_t>(used) + static_cast<std::size_t>(more);
    if (length > sizeof line - 2) length = sizeof line - 2;
    line[length++] = '\n';
    os::write_to_standard_error(line, length);
    errno = saved_errno;
}

void check_failed(const char* condition, const char* file, int line) {
    warn("internal check failed: %s (%s:%d)", condition, file, line);
    std::abort();
}

}  // namespace leakwrap
