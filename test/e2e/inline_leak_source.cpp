#include "inline_leak_source.h"

#include <fstream>
#include <stdexcept>

#include "ground_truth.h"

namespace leakwrap::e2e::inline_leak {

using namespace ground_truth::inline_leak;

unsigned source_line(std::string_view marker) {
    const std::string path = std::string(LEAKWRAP_TEST_PROGRAM_SOURCE_DIR) + "/inline_leak.cpp";
    std::ifstream source(path);
    if (!source) throw std::runtime_error("cannot read " + path);
    unsigned number = 0;
    for (std::string line; std::getline(source, line);) {
        ++number;
        if (line.find(marker) != std::string::npos) return number;
    }
    throw std::runtime_error(path + " has no line marked " + std::string(marker));
}

ExpectedSite direct_site() {
    return {kDirectSize,
            {{"make_buffer", source_line(kMallocLine), true},
             {"handle", source_line(kHandleCallsMakeBuffer), false},
             {"main", source_line(kMainCallsHandle), false}}};
}

ExpectedSite nested_site() {
    return {kNestedSize,
            {{"make_buffer", source_line(kMallocLine), true},
             {"requests::prepare(unsigned int)", source_line(kPrepareCallsMakeBuffer), true},
             {"handle", source_line(kHandleCallsPrepare), false},
             {"main", source_line(kMainCallsHandle), false}}};
}

}  // namespace leakwrap::e2e::inline_leak
