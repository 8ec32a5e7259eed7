// A fingerprint of the calling thread's Ruby control frames, read straight from the VM's
// structures, so that a Ruby backtrace seen before is found without rb_profile_frames(), which
// computes the line of every frame (a search in each iseq's line table) on every call.
//
// Ruby 3.0 to 3.4 share the structures read here (see ruby_vm_frames.cpp). They are not a
// public API: the fingerprint is only ever a cache key, and the cache in ruby_backtrace.cpp
// checks its answers against rb_profile_frames() now and then; on any disagreement it stops
// using the fingerprint for the rest of the process.
#pragma once

#include <cstdint>

namespace leakwrap {

// Once, at start-up: whether this libruby's version is one whose layout is known.
void init_ruby_vm_frames(const char* ruby_version);

// Covers the control frames, innermost first, up to and including the `ruby_frames`-th frame that
// runs Ruby code (or to the outermost frame): every frame that rb_profile_frames(0, ruby_frames,
// ...) looks at, so equal fingerprints within a GC epoch mean equal backtraces. `value` is 0 when
// the frames cannot be read (unknown layout, a thread Ruby has not set up, frames out of bounds).
// Called only by a thread that holds the GVL, with the guard held.
struct RubyFramesFingerprint {
    uint64_t value;
    // Fewer than `ruby_frames` frames run Ruby code: it covers every frame, so it also decides
    // what Ruby answers when asked for more frames.
    bool whole_stack;
};
RubyFramesFingerprint ruby_frames_fingerprint(uint32_t ruby_frames);

}  // namespace leakwrap
