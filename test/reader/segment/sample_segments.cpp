#include "sample_segments.h"

#include <stdexcept>

namespace leakwrap::testing {

SegmentBuilder typical_builder() {
    SegmentBuilder builder;
    builder.overflow_sites[kClassOf100] = {.allocs = 3, .frees = 1, .alloc_bytes = 300, .free_bytes = 100};
    builder.sites = {
        {.allocs = 10,
         .frees = 4,
         .alloc_bytes = 1000,
         .free_bytes = 400,
         .frames = {0x401234, 0x401500, 0x7f0000001000},
         .module_generation = 1,
         .ruby_file = "app/models/user.rb",
         .ruby_line = 42},
        {.allocs = 5, .frees = 5, .alloc_bytes = 50, .free_bytes = 50, .frames = {0x401300}},
    };
    builder.modules = {
        {.path = "/usr/bin/leaky",
         .load_bias = 0,
         .start = 0x400000,
         .end = 0x402000,
         .build_id = {0xde, 0xad, 0xbe, 0xef}},
        {.path = "/lib/libc.so.6",
         .load_bias = 0x7f0000000000,
         .start = 0x7f0000000000,
         .end = 0x7f0000100000,
         .load_generation = 1,
         .unload_generation = 3},
    };
    return builder;
}

SegmentBuilder ruby_builder() {
    const std::vector<BuiltRubyFrame> request{{"app/controllers/users_controller.rb", 7}, {"puma/server.rb", 444}};
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 3,
         .alloc_bytes = 300,
         .frames = {0x401234},
         .ruby_file = "app/models/user.rb",
         .ruby_line = 42,
         .outer_ruby = request},
        {.allocs = 2,
         .alloc_bytes = 64,
         .frames = {0x401300, 0x401400},
         .module_generation = 1,
         .ruby_file = "app/models/post.rb",
         .ruby_line = 9,
         .outer_ruby = request,
         .reduced = true},
        {.allocs = 1,
         .frees = 1,
         .alloc_bytes = 10,
         .free_bytes = 10,
         .frames = {0x401500},
         .ruby_file = "lib/jobs.rb",
         .ruby_line = 3,
         .outer_ruby = {{"puma/server.rb", 444}}},
        {.allocs = 5, .alloc_bytes = 50, .frames = {0x401600}},
        {.allocs = 4,
         .alloc_bytes = 4000,
         .frames = {0x401700},
         .ruby_file = "app/models/user.rb",
         .ruby_line = 42,
         .outer_ruby = request},
    };
    return builder;
}

const Site& site_in_slot(const Snapshot& snapshot, uint32_t slot) {
    for (const Site& site : snapshot.sites)
        if (site.id == slot) return site;
    throw std::out_of_range("no ready site in slot " + std::to_string(slot));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Runs the parser and returns its message, or "" if it accepted the bytes.
std::string parse_error(const std::vector<std::byte>& bytes) {
    try {
        parse_segment(bytes);
    } catch (const SegmentError& error) {
        return error.what();
    }
    return "";
}

}  // namespace leakwrap::testing
