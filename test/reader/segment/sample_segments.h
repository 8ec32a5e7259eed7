// The segments the parser's tests start from, and how they read what the parser made of one.
#pragma once

#include "segment_builder.h"
#include "segment_parser.h"
#include "segment_snapshot.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace leakwrap::testing {

inline constexpr uint32_t kFirst = kFirstSiteSlot;

// Size classes of the blocks below: 100-byte blocks are in class 7 (97..112), 10-byte ones in 1.
inline constexpr uint32_t kClassOf100 = layout::size_class_of(100);
inline constexpr uint32_t kClassOf10 = layout::size_class_of(10);

SegmentBuilder typical_builder();

// Backtraces of one Rails process: the sites share their outer Ruby frames, and the last site's
// whole backtrace is the first's. In layout 6 its stack table holds, at these offsets:
//     0 puma/server.rb:444 (depth 1)   16 users_controller.rb:7 (2)   32 user.rb:42 (3)
//    48 site 88's stack                72 post.rb:9 (3, calls 16)     88 site 89's stack
//   120 jobs.rb:3 (2, calls 0)        136 site 90's stack            160 site 91's (no Ruby)
//   184 site 92's stack (calls 32)    208..272 the builder's slack
SegmentBuilder ruby_builder();

const Site& site_in_slot(const Snapshot& snapshot, uint32_t slot);

bool contains(const std::string& text, const std::string& part);

// Runs the parser and returns its message, or "" if it accepted the bytes.
std::string parse_error(const std::vector<std::byte>& bytes);

}  // namespace leakwrap::testing
