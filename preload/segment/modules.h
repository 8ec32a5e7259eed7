// The list of loaded modules kept in the segment, so the reader can symbolize without the
// target. Refreshed lazily: only when a new call site is recorded (the only moment a new module
// can matter) and only if the loader's load/unload counters moved since the last look.
#pragma once

#include <cstdint>

namespace leakwrap {

// Records every module loaded now, into a freshly created segment.
void scan_modules();

// Brings the list up to date if the loader reports a change; returns the generation a stack
// captured before this call must be stamped with.
uint32_t current_module_generation();

}  // namespace leakwrap
