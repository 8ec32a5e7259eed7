// What a report must say about test/programs/inline_leak, from its source: the frames of its two
// leaking sites, innermost first, with the lines its marker comments stand on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace leakwrap::e2e::inline_leak {

struct ExpectedFrame {
    std::string function;
    unsigned line = 0;
    bool inlined = false;
};

struct ExpectedSite {
    std::size_t block_size = 0;
    std::vector<ExpectedFrame> frames;  // innermost first, down to main
};

// The 1-based line of inline_leak.cpp holding `marker`; throws if none does.
unsigned source_line(std::string_view marker);

// make_buffer inlined into handle, and make_buffer inlined into requests::prepare inlined into
// handle.
ExpectedSite direct_site();
ExpectedSite nested_site();

}  // namespace leakwrap::e2e::inline_leak
