// Checks of the hot path's invariants (the list is at the top of malloc_api.cpp), compiled in
// with -DLEAKWRAP_DEBUG=ON (as CI builds) and out of every other build. A failed check writes
// one line with what failed and where, then aborts: a broken invariant is a bug in leakwrap,
// and the host program must not go on with its memory accounted wrongly.
#pragma once

namespace leakwrap {

[[noreturn]] void check_failed(const char* condition, const char* file, int line);

}  // namespace leakwrap

#if defined(LEAKWRAP_DEBUG) && LEAKWRAP_DEBUG
#define LEAKWRAP_CHECK(condition) \
    ((condition) ? static_cast<void>(0) : ::leakwrap::check_failed(#condition, __FILE__, __LINE__))
#else
// Still compiled (names stay checked), never evaluated.
#define LEAKWRAP_CHECK(condition) static_cast<void>(sizeof((condition) ? 1 : 0))
#endif
