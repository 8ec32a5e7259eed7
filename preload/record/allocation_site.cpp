#include "allocation_site.h"

#include "birth_clock.h"
#include "call_site_cache.h"
#include "debug_check.h"
#include "guard.h"
#include "known_sites.h"
#include "ruby_backtrace.h"
#include "site_table.h"
#include "stack_capture.h"
#include "stack_table.h"

namespace leakwrap {
namespace {

// A Ruby thread's native stack keeps what its Ruby backtrace cannot show: a C extension's frames
// (and a library's below them) up to the VM frame that called the extension; the interpreter's
// dispatch frames above would only multiply the stacks of every Ruby line. An extension
// allocates through the VM's allocation functions (ruby_xmalloc) as often as through malloc, so
// the VM frames at the inner end are looked through, up to kVmAllocationFrames of them; an
// allocation with no extension frame there is the VM's own (a string, an array) and keeps just
// its innermost frame.
constexpr uint32_t kVmAllocationFrames = 3;

// The depth a native stack keeps in a Ruby process (see kVmAllocationFrames); 0 if the frames
// captured do not reach the VM frame that called the extension.
uint32_t depth_below_ruby_vm(const CapturedStack& stack) {
    uint32_t first_outside_vm = 0;
    while (first_outside_vm < stack.depth && is_ruby_vm_code(stack.frames[first_outside_vm]))
        if (++first_outside_vm == kVmAllocationFrames) return 1;
    if (first_outside_vm == stack.depth) return stack.depth == 0 ? 0 : 1;
    for (uint32_t i = first_outside_vm + 1; i < stack.depth; ++i)
        if (is_ruby_vm_code(stack.frames[i])) return i + 1;
    return 0;
}

// The VM's own allocation made with no Ruby backtrace to say why (while the VM boots, during
// GC, outside the GVL) keeps this many of its innermost frames: enough to tell what the VM was
// doing, without a stack for every path through the interpreter (booting Ruby alone made
// 9,000 stacks of 11 to 16 frames, each for a block or two).
constexpr uint32_t kVmFramesWithoutBacktrace = 3;

// Cuts a captured stack where the Ruby VM called in, given its depth_below_ruby_vm(); false if
// the frames captured do not reach that far.
bool cut_below_ruby_vm(uint32_t depth, bool ruby_backtrace, CapturedStack* stack) {
    if (depth == 0) return false;
    if (depth == 1 && !ruby_backtrace) depth = std::min(kVmFramesWithoutBacktrace, stack->depth);
    LEAKWRAP_CHECK(depth <= stack->depth);
    stack->depth = depth;
    return true;
}

// Native frames tried first in a Ruby process, when the stack cannot be walked, if the caller
// is not the VM: most extensions reach the VM's frames within a few, and each frame not unwound
// is time saved. When the VM is the caller, its next kVmAllocationFrames - 1 frames tell
// whether an extension is behind it.
constexpr uint32_t kFirstTryBelowRubyVm = 8;

void capture_native_stack(const CallerContext& caller, bool slots_wanted, bool ruby_backtrace, CapturedStack* stack) {
    uint32_t max_depth = g_segment.max_depth;
    bool ruby_process = ruby_vm_loaded();
    // A walk stops where the frames decide depth_below_ruby_vm(), and says so when it stopped
    // there: one pass, however far the VM is.
    uint32_t cut = 0;
    if (ruby_process &&
        try_walking_stack(caller, max_depth, CodeBoundary{ruby_vm_code(), kVmAllocationFrames}, stack, &cut)) {
        LEAKWRAP_CHECK(cut == 0 || cut == depth_below_ruby_vm(*stack));
        cut_below_ruby_vm(cut != 0 ? cut : depth_below_ruby_vm(*stack), ruby_backtrace, stack);
        return;
    }
    if (ruby_process && max_depth > kFirstTryBelowRubyVm) {
        bool vm_caller = is_ruby_vm_code(caller.return_address);
        capture_stack_quickly(caller, vm_caller ? kVmAllocationFrames : kFirstTryBelowRubyVm, slots_wanted, stack);
        if (cut_below_ruby_vm(depth_below_ruby_vm(*stack), ruby_backtrace, stack)) return;
    }
    capture_stack_quickly(caller, max_depth, slots_wanted, stack);
    if (ruby_process) cut_below_ruby_vm(depth_below_ruby_vm(*stack), ruby_backtrace, stack);
}

// The key of the memo of known sites (known_sites.h): the native frames, the Ruby backtrace by
// its innermost frame's record and whether it was reduced, the size class and the birth cell.
// The memo places a key by its low bits: the last shift brings the high bits down even for a
// stack of no frame.
uint64_t known_site_key(const CapturedStack& stack, const RubyBacktrace& ruby, SiteKind kind) {
    uint64_t h = ((uint64_t{ruby.innermost} << 32) ^ (uint64_t{ruby.reduced} << 24) ^
                  (uint64_t{kind.birth_cell} << 16) ^ (uint64_t{stack.depth} << 8) ^ kind.size_class) *
                 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < stack.depth; ++i) {
        h = (h ^ stack.frames[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h ^ (h >> 32);
}

}  // namespace

bool init_allocation_sites() { return init_site_table() && init_known_sites(); }

uint32_t site_for_allocation(uint32_t size_class, const CallerContext& caller) {
    LEAKWRAP_CHECK(inside_leakwrap() && size_class < layout::kSizeClassCount);
    const SiteKind kind{size_class, current_birth_cell()};
    RubyBacktrace ruby;
    current_ruby_backtrace(g_segment.max_ruby_depth, &ruby);
    // The call-site cache knows a call by its caller and stack pointer: an allocation with a Ruby
    // backtrace is made by an interpreter whose stacks keep changing under one C caller, and hit
    // it 4% of the time on Rails requests, less than its look-ups and updates cost.
    const bool cacheable = ruby.depth == 0;
    CacheLookup cached{kNoCachedSite, false};
    if (cacheable) {
        cached = look_up_site(caller, size_class, kind.birth_cell);
        if (cached.site != kNoCachedSite) return cached.site;
    }

    CapturedStack stack;
    capture_native_stack(caller, cached.fill, ruby.depth > 0, &stack);
    uint64_t known_key = known_site_key(stack, ruby, kind);
    uint32_t site = known_site(known_key);
    if (site == kUnknownSite) {
        StackKey key{stack.frames, stack.depth, ruby.innermost, ruby.depth, ruby.reduced ? layout::kStackReduced : 0};
        site = site_for_stack(key, hash_stack_key(key), kind);
        remember_known_site(known_key, site);
    }
    if (cacheable) remember_site(caller, size_class, kind.birth_cell, stack, site);
    LEAKWRAP_CHECK(site < g_segment.site_capacity);
    return site;
}

}  // namespace leakwrap
