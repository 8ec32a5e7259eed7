// A non-PIE executable without a symbol table, as distributions ship compiler drivers: built
// -no-pie -fno-pic and stripped (test/programs/CMakeLists.txt). Taking strcmp's address in
// non-PIC code gives strcmp a canonical PLT entry: an undefined dynamic symbol with a value
// inside this executable. exported_last is its one defined function symbol, after the others.
// Leaks ground_truth::stripped_no_pie::kBlocks blocks from leak_block (named nowhere in the
// file) and one from exported_last.
#include <cstdlib>
#include <cstring>

#include "ground_truth.h"
#include "handshake.h"

using namespace ground_truth::stripped_no_pie;

namespace {
void* g_blocks[kBlocks + 1];
int (*volatile g_compare)(const char*, const char*);
}  // namespace

__attribute__((noinline)) void leak_block(std::size_t index) {
    g_blocks[index] = std::malloc(kBlockSize);
    if (g_blocks[index] == nullptr) fail("malloc in leak_block");
}

extern "C" __attribute__((noinline)) void exported_last();

int main(int argc, char** argv) {
    g_compare = std::strcmp;
    for (std::size_t i = 0; i < kBlocks; ++i) leak_block(i);
    if (argc > 1 && g_compare(argv[1], "none") == 0) return 2;
    exported_last();
    announce_ready_and_wait_for_release();
    return 0;
}

extern "C" __attribute__((noinline)) void exported_last() {
    g_blocks[kBlocks] = std::malloc(kBlockSize);
    if (g_blocks[kBlocks] == nullptr) fail("malloc in exported_last");
}
