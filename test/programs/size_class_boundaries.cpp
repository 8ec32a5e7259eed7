// Target of the size-class test (test/timeseries/size_classes_test.cpp): blocks of sizes on both
// sides of class boundaries, kBlocksPerSize of each, all live when it says READY.
#include <cstdlib>
#include <cstring>

#include "handshake.h"
#include "size_class_boundaries.h"

__attribute__((noinline)) void allocate_boundary_sizes() {
    for (const std::size_t size : size_class_boundaries::kSizes) {
        for (std::size_t i = 0; i < size_class_boundaries::kBlocksPerSize; ++i) {
            void* block = std::malloc(size);
            if (block == nullptr) fail("malloc");
            std::memset(block, 0x44, size);
        }
    }
}

int main() {
    allocate_boundary_sizes();
    announce_ready_and_wait_for_release();
    return 0;
}
