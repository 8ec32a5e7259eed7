// The Ruby source location (file:line) of the allocating thread, when it runs Ruby code.
// Found at run time through libruby's exported symbols, so the library stays usable in any
// program; every call into Ruby is made only when it is safe (see ruby_location.cpp).
#pragma once

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

struct RubyLocation {
    uint32_t file = layout::kNoString;  // string pool offset of the file name
    uint32_t line = 0;
};

// Looks libruby's functions up once (a no-op in programs without Ruby).
void init_ruby_location();

RubyLocation current_ruby_location();

}  // namespace leakwrap
