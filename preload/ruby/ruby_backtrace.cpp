#include "ruby_backtrace.h"

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstring>

#include "code_range.h"
#include "debug_check.h"
#include "diagnostics.h"
#include "guard.h"
#include "ruby_frame_tree.h"
#include "ruby_vm_frames.h"
#include "segment.h"

namespace leakwrap {
namespace {

using Value = uintptr_t;  // Ruby's VALUE

// libruby's own entry points, all exported by Ruby >= 2.3:
//  - ruby_current_vm_ptr: NULL until ruby_init() and after the VM is destroyed;
//  - ruby_thread_has_gvl_p(): the thread is a Ruby thread holding the GVL (false for native
//    threads, for Ruby threads inside a blocking region, and once teardown has released the
//    main thread's execution context);
//  - rb_during_gc(): the calls below are not made while the GC runs (objects may be moving);
//  - rb_profile_frames(): the current thread's control frames (method entries or iseqs) and
//    their lines, the API of sampling profilers: it walks the frames and allocates nothing.
//    Ruby 3.1's skips frames wrongly for a start above 0, so it is always called with 0;
//  - rb_profile_frame_path() and rb_string_value_ptr(): a frame's source path, as Ruby's own
//    backtraces print it (nil for a C method's frame), without allocating;
//  - rb_gc_count(): GCs so far; a frame VALUE may name another frame after a GC (see below).
struct RubyApi {
    void* const* vm;
    int (*has_gvl)();
    int (*during_gc)();
    int (*profile_frames)(int start, int limit, Value* frames, int* lines);
    Value (*frame_path)(Value frame);
    char* (*string_pointer)(volatile Value* string);
    size_t (*gc_count)();
};
constinit RubyApi g_ruby{};
constinit CodeRange g_vm_code{};

// Set when ruby_init()/ruby_setup() has returned: while the VM boots, ruby_current_vm_ptr is
// already set but the main thread has no control frame yet. Teardown needs no flag: it clears
// the execution context first, after which ruby_thread_has_gvl_p() is false.
constinit std::atomic<bool> g_vm_ready{false};

// Ruby's nil on 64-bit builds (Ruby >= 2.0 without flonum-less builds; all Debian's).
constexpr Value kRubyNil = 0x08;

constexpr uint32_t kMaxPathLength = 4096;
// C method frames count against rb_profile_frames' limit but carry no file: room for a few.
constexpr uint32_t kCMethodFrames = 8;

// Source files are interned into the segment's string pool once: this process-private table
// maps Ruby's path pointer to the pool offset (the content is compared too, since Ruby may
// reuse the memory of a freed string for another path).
struct InternedFile {
    const char* source;
    uint32_t offset;
    uint32_t length;
};
constexpr uint32_t kInternedSlots = 4096;
constexpr uint32_t kProbes = 8;
constinit InternedFile g_interned[kInternedSlots]{};

// Frame VALUE -> pool offset of its file, so that the frames of a backtrace seen before cost a
// table look-up each. Valid for one GC epoch: a GC may free an iseq or, compacting, move
// another object to its address. Direct-mapped.
struct KnownFrame {
    Value frame;
    uint64_t gc_epoch;
    uint32_t file;
};
constexpr uint32_t kKnownFrameSlots = 4096;
constinit KnownFrame g_known_frames[kKnownFrameSlots]{};

// Backtraces by the fingerprint of the control frames they came from (ruby_vm_frames.h), valid
// for one GC epoch like the frame table above: the common case of a backtrace seen before then
// costs a walk over the frames instead of a line look-up in every frame. Direct-mapped; in
// .bss, so a program without Ruby never touches it.
struct KnownBacktrace {
    uint64_t fingerprint;  // 0: empty
    uint64_t gc_epoch;
    RubyBacktrace backtrace;
};
constexpr uint32_t kKnownBacktraceSlots = 4096;
constinit KnownBacktrace g_known_backtraces[kKnownBacktraceSlots]{};

// Every kVerifyEvery-th backtrace found by its fingerprint is also asked of Ruby: if the two
// ever differ, the VM's frames are not laid out as ruby_vm_frames.cpp reads them (or a case it
// does not cover arose), and fingerprints are not used again.
constexpr uint32_t kVerifyEvery = 1024;
constinit uint32_t g_hits_until_verify = 1;  // the first hit is verified
constinit bool g_fingerprints_trusted = true;

// Only the thread holding the GVL reaches these tables, so the lock is practically never
// contended; it exists for Ractors, whose threads hold GVLs of their own.
constinit std::atomic_flag g_tables_busy = ATOMIC_FLAG_INIT;

uint32_t slot_of(uintptr_t key, uint32_t slots) {
    return static_cast<uint32_t>(((key >> 3) * 0x9E3779B97F4A7C15ull) >> 40) % slots;
}

bool same_file(const InternedFile& entry, const char* file) {
    return entry.source == file && std::strncmp(pool_string(entry.offset), file, entry.length + 1) == 0;
}

uint32_t intern_file(const char* file) {
    uint32_t slot = slot_of(reinterpret_cast<uintptr_t>(file), kInternedSlots);
    uint32_t free_slot = slot;
    for (uint32_t probe = 0; probe < kProbes; ++probe) {
        InternedFile& entry = g_interned[(slot + probe) % kInternedSlots];
        if (entry.source != nullptr && same_file(entry, file)) return entry.offset;
        if (entry.source == nullptr) {
            free_slot = (slot + probe) % kInternedSlots;
            break;
        }
    }
    layout::StringRef stored{};
    if (!intern_string(file, strnlen(file, kMaxPathLength), &stored)) return layout::kNoString;
    g_interned[free_slot] = InternedFile{file, stored.offset, stored.length};
    return stored.offset;
}

// The pool offset of a frame's file; kNoString for a C method's frame or a full pool.
uint32_t file_of(Value frame, uint64_t gc_epoch) {
    KnownFrame& known = g_known_frames[slot_of(frame, kKnownFrameSlots)];
    if (known.frame == frame && known.gc_epoch == gc_epoch) return known.file;
    volatile Value path = g_ruby.frame_path(frame);
    uint32_t file = layout::kNoString;
    if (path != kRubyNil && path != 0) file = intern_file(g_ruby.string_pointer(&path));
    known = KnownFrame{frame, gc_epoch, file};
    return file;
}

// What ask_ruby() found besides the backtrace.
struct RubyAnswer {
    // The innermost max_depth frames running Ruby code decided the backtrace alone: it has
    // max_depth frames, and every frame left out before its last was a C method's (no line, no
    // file), not a Ruby frame without a line (the VM's root frame) or whose file found no room.
    bool decided_by_innermost;
    // The backtrace is Ruby's answer: its frames, if any, found room in the frame tree (maybe its
    // innermost alone, RubyBacktrace::reduced).
    bool stored;
};

// Ruby's own answer: the frames rb_profile_frames() gives, less those without a file or line,
// stored in the frame tree (none if they found no room there). Called with g_tables_busy held.
// Out of line: current_ruby_backtrace() inlines all else it calls, and asks Ruby rarely.
__attribute__((noinline)) RubyAnswer ask_ruby(uint32_t max_depth, uint32_t frames_asked, uint64_t gc_epoch,
                                              RubyBacktrace* out) {
    LEAKWRAP_CHECK(g_tables_busy.test(std::memory_order_relaxed));
    Value frames[layout::kMaxRubyDepth + kCMethodFrames];
    int lines[layout::kMaxRubyDepth + kCMethodFrames];
    int found = g_ruby.profile_frames(0, static_cast<int>(frames_asked), frames, lines);
    layout::RubyFrame kept[layout::kMaxRubyDepth];
    uint32_t depth = 0;
    bool only_c_methods_left_out = true;
    for (int i = 0; i < found && depth < max_depth; ++i) {
        uint32_t file = file_of(frames[i], gc_epoch);
        if (lines[i] <= 0 || file == layout::kNoString) {
            only_c_methods_left_out = only_c_methods_left_out && lines[i] <= 0 && file == layout::kNoString;
            continue;
        }
        kept[depth++] = layout::RubyFrame{file, static_cast<uint32_t>(lines[i])};
    }
    out->innermost = depth == 0 ? layout::kNoRubyFrame : intern_ruby_backtrace(kept, depth);
    out->depth = out->innermost == layout::kNoRubyFrame ? 0 : ruby_frame_record(out->innermost)->depth;
    out->reduced = out->depth < depth && out->depth > 0;
    return {depth == max_depth && only_c_methods_left_out, depth == 0 || out->depth > 0};
}

KnownBacktrace* known_backtrace(uint64_t fingerprint) {
    return &g_known_backtraces[static_cast<uint32_t>(fingerprint >> 40) % kKnownBacktraceSlots];
}

// The entry a fingerprint of the frames up to the `ruby_frames`-th running Ruby code names, and
// whether it holds that fingerprint's backtrace.
struct KnownLookup {
    uint64_t fingerprint;  // 0: the frames could not be read
    KnownBacktrace* known;
    bool hit;
    bool whole_stack;  // RubyFramesFingerprint::whole_stack
};

KnownLookup look_up_known(uint32_t ruby_frames, uint64_t gc_epoch) {
    const RubyFramesFingerprint fingerprint = ruby_frames_fingerprint(ruby_frames);
    if (fingerprint.value == 0) return {0, nullptr, false, false};
    KnownBacktrace* known = known_backtrace(fingerprint.value);
    return {fingerprint.value, known, known->fingerprint == fingerprint.value && known->gc_epoch == gc_epoch,
            fingerprint.whole_stack};
}

template <typename T>
T ruby_symbol(const char* name) {
    return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void init_ruby_backtrace() {
    RubyApi api{};
    api.vm = ruby_symbol<void* const*>("ruby_current_vm_ptr");
    api.has_gvl = ruby_symbol<int (*)()>("ruby_thread_has_gvl_p");
    api.during_gc = ruby_symbol<int (*)()>("rb_during_gc");
    api.profile_frames = ruby_symbol<int (*)(int, int, Value*, int*)>("rb_profile_frames");
    api.frame_path = ruby_symbol<Value (*)(Value)>("rb_profile_frame_path");
    api.string_pointer = ruby_symbol<char* (*)(volatile Value*)>("rb_string_value_ptr");
    api.gc_count = ruby_symbol<size_t (*)()>("rb_gc_count");
    if (api.vm && api.has_gvl && api.during_gc && api.profile_frames && api.frame_path && api.string_pointer &&
        api.gc_count) {
        g_ruby = api;
        g_vm_code = code_range_of(reinterpret_cast<const void*>(api.profile_frames));
        init_ruby_vm_frames(ruby_symbol<const char*>("ruby_version"));
    }
}

bool ruby_vm_loaded() { return g_vm_code.begin != g_vm_code.end; }

bool is_ruby_vm_code(uintptr_t address) { return g_vm_code.contains(address); }

CodeRange ruby_vm_code() { return g_vm_code; }

// Flattened: both fingerprints and their look-ups are inlined (ruby_json: 16M fewer instructions
// of 3.12G), and this into site_for_allocation().
__attribute__((flatten)) void current_ruby_backtrace(uint32_t max_depth, RubyBacktrace* out) {
    LEAKWRAP_CHECK(inside_leakwrap());
    *out = RubyBacktrace{layout::kNoRubyFrame, 0, false};
    if (max_depth == 0 || g_ruby.profile_frames == nullptr || !g_vm_ready.load(std::memory_order_acquire) ||
        *g_ruby.vm == nullptr || !g_ruby.has_gvl() || g_ruby.during_gc())
        return;
    if (g_tables_busy.test_and_set(std::memory_order_acquire)) return;
    uint64_t gc_epoch = g_ruby.gc_count();
    uint32_t frames_asked = max_depth + kCMethodFrames;
    // Most backtraces are decided by their innermost max_depth Ruby frames, whose fingerprint
    // is tried first; the frames up to the last one Ruby looks at are fingerprinted only when
    // that one is not known, and not when it covered every frame already (a script's few
    // frames): it then decides the backtrace as well, and is the key it is kept under.
    KnownLookup innermost{}, every{};
    if (g_fingerprints_trusted && max_depth == g_segment.max_ruby_depth) {
        innermost = look_up_known(max_depth, gc_epoch);
        if (!innermost.hit && !innermost.whole_stack) every = look_up_known(frames_asked, gc_epoch);
    }
    const KnownLookup& found = innermost.hit ? innermost : every;
    if (found.hit && --g_hits_until_verify != 0) {
        *out = found.known->backtrace;
    } else {
        const RubyAnswer answer = ask_ruby(max_depth, frames_asked, gc_epoch, out);
        if (found.hit) {
            g_hits_until_verify = kVerifyEvery;
            // Equal backtraces are one record in the tree; one that found no room proves nothing.
            if (answer.stored && found.known->backtrace.innermost != out->innermost) {
                g_fingerprints_trusted = false;
                warn(
                    "Ruby's control frames are not laid out as leakwrap reads them: Ruby "
                    "backtraces are taken the slow way from now on");
            }
        } else if (answer.stored) {
            const KnownLookup& key = answer.decided_by_innermost || innermost.whole_stack ? innermost : every;
            if (key.known != nullptr) *key.known = KnownBacktrace{key.fingerprint, gc_epoch, *out};
        }
    }
    g_tables_busy.clear(std::memory_order_release);
}

int run_ruby_setup() {
    int (*real_setup)();
    {
        GuardScope guard;
        real_setup = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "ruby_setup"));
    }
    int status = real_setup != nullptr ? real_setup() : -1;
    if (status == 0) g_vm_ready.store(true, std::memory_order_release);
    return status;
}

void run_ruby_init() {
    void (*real_init)();
    {
        GuardScope guard;
        real_init = reinterpret_cast<void (*)()>(dlsym(RTLD_NEXT, "ruby_init"));
    }
    if (real_init != nullptr) real_init();
    g_vm_ready.store(true, std::memory_order_release);
}

}  // namespace leakwrap
