// libFuzzer target: parse_segment must turn any bytes into a snapshot or a SegmentError, never
// crash, hang or read out of bounds. Built only with -DLEAKWRAP_FUZZ=ON and clang; scripts/fuzz.sh
// builds and runs it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "segment_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        leakwrap::parse_segment(std::span(reinterpret_cast<const std::byte*>(data), size));
    } catch (const leakwrap::SegmentError&) {
    }
    return 0;
}
