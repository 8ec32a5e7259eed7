// What each target program allocates. The programs act on these numbers and the e2e tests derive
// the counters they expect from them, so both sides always describe the same workload.
#pragma once

#include <cstddef>
#include <iterator>

namespace ground_truth {

namespace alloc_kinds {
inline constexpr std::size_t kMallocCount = 100, kMallocSize = 100, kMallocFreed = 50;
inline constexpr std::size_t kCallocCount = 20, kCallocElements = 10, kCallocElementSize = 33;

// Each chain is malloc(first) followed by reallocs through the rest; only the last block lives.
inline constexpr std::size_t kReallocChains = 5;
inline constexpr std::size_t kReallocChainSizes[] = {10, 20, 40, 80};
inline constexpr std::size_t kReallocChainLength = std::size(kReallocChainSizes);

struct AlignedRequest {
    std::size_t alignment;
    std::size_t size;
    std::size_t count;
};
inline constexpr AlignedRequest kPosixMemalign[] = {{64, 200, 3}, {4096, 300, 2}};
inline constexpr AlignedRequest kAlignedAlloc[] = {{256, 512, 4}};
inline constexpr AlignedRequest kMemalign[] = {{128, 1000, 3}};
inline constexpr std::size_t kVallocCount = 2, kVallocSize = 5000;
inline constexpr std::size_t kPvallocCount = 2, kPvallocSize = 5000;  // counted page-rounded
// More page-aligned blocks live at once than the preload's table of headerless blocks holds
// (49,152): the last ones take a header. All but every kPageAlignedKeptEvery-th are then freed,
// of both kinds; what stays (6,400 bytes) is less than leak_valloc's, whose rank the ecosystem
// tests read.
inline constexpr std::size_t kPageAlignedCount = 50000, kPageAlignedSize = 64, kPageAlignedKeptEvery = 500;
inline constexpr std::size_t kPageAlignedKept = kPageAlignedCount / kPageAlignedKeptEvery;

inline constexpr std::size_t kNewCharArrayCount = 3, kNewCharArrayLength = 1000;
inline constexpr std::size_t kNewIntArrayCount = 2, kNewIntArrayLength = 250;

// Every round allocates kChurnAllocsPerRound blocks and frees all of them.
inline constexpr std::size_t kChurnRounds = 500, kChurnAllocsPerRound = 7;
}  // namespace alloc_kinds

namespace threads_cross_free {
inline constexpr std::size_t kThreads = 8;
inline constexpr std::size_t kBlocksPerThread = 1000;
// Thread i+1 (mod kThreads) frees the first kFreedByNextThread blocks of thread i.
inline constexpr std::size_t kFreedByNextThread = 250;
inline constexpr std::size_t block_size_of_thread(std::size_t thread) { return 48 + 8 * thread; }
inline constexpr std::size_t kChurnPerThread = 20000, kChurnSize = 32;
}  // namespace threads_cross_free

namespace thread_succession {
// Rounds of kThreadsPerRound threads started together and joined; the threads of even rounds
// allocate through left_path, those of odd rounds through right_path. Each thread allocates
// kBlocksPerThread blocks (more than the call-site cache needs to fill an entry) and frees
// every other one.
inline constexpr std::size_t kRounds = 200, kThreadsPerRound = 2;
inline constexpr std::size_t kBlocksPerThread = 200, kBlockSize = 40;
inline constexpr std::size_t kThreadsPerPath = kRounds / 2 * kThreadsPerRound;
inline constexpr std::size_t kLivePerThread = kBlocksPerThread / 2;
}  // namespace thread_succession

namespace fork_leak {
inline constexpr std::size_t kParentBlocks = 300, kParentBlockSize = 64;
inline constexpr std::size_t kChildBlocks = 40, kChildBlockSize = 512;
inline constexpr std::size_t kInheritedFreedByChild = 100;
}  // namespace fork_leak

namespace stripped_no_pie {
inline constexpr std::size_t kBlocks = 3, kBlockSize = 72;
}  // namespace stripped_no_pie

namespace many_sites {
inline constexpr std::size_t kSites = 256, kBlockSize = 24;
}  // namespace many_sites

namespace many_stacks {
// 2^kLevels stacks, told apart only when LEAKWRAP_DEPTH keeps kLevels + 2 frames (the malloc
// caller's, the last level's, and one per level that chose a call site).
inline constexpr unsigned kLevels = 15;
inline constexpr std::size_t kStacks = std::size_t{1} << kLevels, kBlockSize = 40;
}  // namespace many_stacks

namespace late_leak {
inline constexpr std::size_t kRoutes = 200, kBlockSize = 40;
}  // namespace late_leak

namespace plugin_leak {
inline constexpr unsigned kTexts = 8;  // each a 64-byte block from torture_plugin's plugin_describe
}  // namespace plugin_leak

namespace torture_plugin {
// The rounds the programs that load copies of the plugin pass to plugin_churn(rounds), which
// makes one realloc and one malloc a round and frees every block it made.
inline constexpr unsigned kChurnRounds = 3;
inline constexpr long long kAllocationsPerChurn = 2 * kChurnRounds;
}  // namespace torture_plugin

namespace fork_while_learning {
// Copies of the plugin loaded; the learning thread calls all but the last once.
inline constexpr int kCopies = 1000;
}  // namespace fork_while_learning

namespace cancelled_while_learning {
// Copies of the plugin loaded, called in turn by kWorkers threads one after the other, each
// cancelled a millisecond or so after its start.
inline constexpr int kCopies = 400;
inline constexpr int kWorkers = 16;
}  // namespace cancelled_while_learning

namespace inline_leak {
// Each request leaks one block allocated directly through the inlined make_buffer and one through
// make_buffer inlined into the inlined requests::prepare.
inline constexpr unsigned kRequests = 6;
inline constexpr std::size_t kDirectSize = 40, kNestedSize = 56;
// Comments in inline_leak.cpp that mark the lines a report names.
inline constexpr const char* kMallocLine = "inline_leak: make_buffer mallocs";
inline constexpr const char* kPrepareCallsMakeBuffer = "inline_leak: prepare calls make_buffer";
inline constexpr const char* kHandleCallsMakeBuffer = "inline_leak: handle calls make_buffer";
inline constexpr const char* kHandleCallsPrepare = "inline_leak: handle calls prepare";
inline constexpr const char* kMainCallsHandle = "inline_leak: main calls handle";
}  // namespace inline_leak

namespace fragmented_arenas {
inline constexpr int kThreads = 8;
inline constexpr std::size_t kBlocksPerThread = 150000, kKeepEvery = 64;
// 100 to 500 bytes, spread so that neighbours differ.
constexpr std::size_t block_size(std::size_t i) { return 100 + (i * 7919) % 401; }
}  // namespace fragmented_arenas

}  // namespace ground_truth

namespace ground_truth::startup_then_leak {
// 20 MB at start-up in 2,000 blocks, then, from kLeakStartMs after main() began, kLeaks blocks
// of kLeakSize leaked one every kLeakEveryMs. The birth grid has a cell boundary 2 s after the
// segment was made (a few ms after the start): --born-after 2s falls between the two phases.
inline constexpr std::size_t kStartupBlocks = 2000, kStartupBlockSize = 10000;
inline constexpr std::size_t kLeaks = 300, kLeakSize = 100;
inline constexpr int kLeakStartMs = 2600, kLeakEveryMs = 3;
inline constexpr const char* kBornAfter = "2s";
}  // namespace ground_truth::startup_then_leak

namespace ground_truth::sampling {
// Enough bytes that a 16 KiB mean interval draws thousands of samples: the estimate's standard
// error is then under 2%, and the tests allow 10%.
inline constexpr std::size_t kBlocks = 60000, kBlockSize = 1000, kFreed = 30000;
inline constexpr std::size_t kSampleInterval = 16384;
inline constexpr double kTolerance = 0.10;
}  // namespace ground_truth::sampling

namespace ground_truth::focus_targets {
// Three leaks whose stacks differ in what --focus, --ignore, --hide-runtime and the short C++
// names act on: a plain function that calls malloc, one whose blocks come from libc's strdup, and
// a member of a class template with long arguments whose blocks come from libstdc++'s operator
// new (through new[]). Sizes in different size classes, counts distinct, so each row is told by
// its numbers.
inline constexpr std::size_t kPlainCount = 7, kPlainSize = 1000;
inline constexpr std::size_t kStrdupCount = 5, kStrdupLength = 99;  // + its terminating NUL
inline constexpr std::size_t kRegistryCount = 3, kRegistrySize = 3000;
}  // namespace ground_truth::focus_targets
