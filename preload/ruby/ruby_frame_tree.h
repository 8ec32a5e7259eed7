// Ruby backtraces stored once in the stack table as a tree of RubyFrameRecords (layout R8): a
// backtrace is the chain from its innermost frame's record outward, and backtraces that end in
// the same outer frames share those records. A backtrace is then named by one reference, its
// innermost frame's, which is what stacks and the per-thread caches key on.
//
// A process-private open-addressing table finds a record by (frame, caller). Only a thread
// running Ruby code with the GVL adds to it, so its lock is practically never contended (Ractors
// hold GVLs of their own); a thread that finds the lock taken gets no Ruby frames for that
// allocation rather than wait, since the hot path never blocks.
#pragma once

#include <cstdint>

#include "leakwrap/segment_layout.h"

namespace leakwrap {

// For the current segment: the records of an earlier segment are forgotten.
bool init_ruby_frame_tree();

// The reference of the innermost record of `frames` (innermost first, depth >= 1), adding the
// records missing. Once the stack table is nearly full (stack_table_nearly_full()), a backtrace
// not stored whole is stored as its innermost frame alone, as a reduced stack keeps it. Returns
// layout::kNoRubyFrame if another thread holds the table or the stack table has no room. Called
// with the guard held.
uint32_t intern_ruby_backtrace(const layout::RubyFrame* frames, uint32_t depth);

// The record of the innermost frame of the backtrace `innermost` names, alone (depth 1):
// what a reduced stack keeps. layout::kNoRubyFrame as intern_ruby_backtrace() gives it.
uint32_t innermost_ruby_frame_alone(uint32_t innermost);

// In a forked child, whose only thread cannot be holding the table.
void reset_ruby_frame_tree_after_fork();

}  // namespace leakwrap
