// The Ruby backtrace (file:line frames, innermost first) of the allocating thread, when it runs
// Ruby code, and where the Ruby VM's own code lies, so that a stack keeps only the native frames
// that the Ruby backtrace cannot show. Found at run time through libruby's exported symbols, so
// the library stays usable in any program; every call into Ruby is made only when it is safe
// (see ruby_backtrace.cpp).
#pragma once

#include <cstdint>

#include "code_range.h"
#include "leakwrap/segment_layout.h"

namespace leakwrap {

// A backtrace as stored in the stack table (ruby_frame_tree.h): its innermost frame's record,
// which names it whole.
struct RubyBacktrace {
    uint32_t innermost;  // layout::kNoRubyFrame when depth is 0
    uint32_t depth;      // 0: the thread is not running Ruby code (or Ruby frames are not recorded)
    // The tree kept its innermost frame alone (a nearly full table): its stack is a reduced one,
    // never the stack of a backtrace that is that one frame.
    bool reduced;
};

// Looks libruby's functions and code up once (a no-op in programs without Ruby).
void init_ruby_backtrace();

// Up to max_depth frames of the calling thread's Ruby backtrace. Called with the guard held.
void current_ruby_backtrace(uint32_t max_depth, RubyBacktrace* out);

// ruby_setup() and ruby_init(), the interpreter's start-up calls, are wrapped to learn when the
// VM is ready: while it boots, ruby_current_vm_ptr is already set but the main thread has no
// control frame yet. Both exist in every libruby; in other programs they are never called.
int run_ruby_setup();
void run_ruby_init();

// libruby (or an executable with the Ruby VM linked in) is part of the process.
bool ruby_vm_loaded();

// The address lies in the Ruby VM's code (libruby, or an executable with the VM linked in).
bool is_ruby_vm_code(uintptr_t address);
CodeRange ruby_vm_code();

}  // namespace leakwrap
