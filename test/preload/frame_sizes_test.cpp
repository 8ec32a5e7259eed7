// Walking a stack by learned frame sizes (preload/unwind/frame_sizes.cpp, stack_capture.cpp) in this
// test process: the table's rules for what it learns, and real stacks of this program's own
// functions and of libc's, first unknown, then learned from the modules' unwind tables by a walk
// and walked to the same frames as libunwind finds, from the same slots, a frame that allocates
// on the stack dynamically through its frame pointer.
#include "frame_sizes.h"

#include <alloca.h>
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "caller.h"
#include "guard.h"
#include "stack_capture.h"
#include "temporary_directory.h"
#include "thread_stacks.h"
#include "unwind_tables.h"

namespace leakwrap {
namespace {

class FrameSizes : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(init_frame_sizes());
        ASSERT_TRUE(init_unwind_tables());
        forget_frame_sizes();
    }
};

TEST_F(FrameSizes, KeepsASizeSeenAgainAndGivesUpOnTwoSizes) {
    const uintptr_t address = 0x7f0000401234;
    EXPECT_EQ(frame_size(address), kUnknownFrame);
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), 48u);
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), 48u);
    learn_frame_size(address, 64);  // a frame of two sizes cannot be walked by size
    EXPECT_EQ(frame_size(address), kUnwalkableFrame);
    learn_frame_size(address, 48);
    EXPECT_EQ(frame_size(address), kUnwalkableFrame);
}

TEST_F(FrameSizes, RefusesSizesNoFrameHas) {
    learn_frame_size(0x401000, kMaxFrameSize + 8);
    EXPECT_EQ(frame_size(0x401000), kUnwalkableFrame);
    learn_frame_size(0x402000, kFramePointerFrame + 1);  // neither a marker nor a size
    EXPECT_EQ(frame_size(0x402000), kUnwalkableFrame);
    learn_frame_size(0x402100, sized_frame(40, kMaxSavedRbpSlot));  // saved rbp at CFA - 64
    EXPECT_EQ(frame_bytes(frame_size(0x402100)), 40u);
    EXPECT_EQ(saved_rbp_slot(frame_size(0x402100)), kMaxSavedRbpSlot);
    learn_frame_size(0x403000, kOutermostFrame);
    EXPECT_EQ(frame_size(0x403000), kOutermostFrame);
}

TEST_F(FrameSizes, ForgetsEverythingWhenAModuleIsUnloaded) {
    for (uintptr_t address = 0x500000; address < 0x500000 + 1000 * 16; address += 16) learn_frame_size(address, 32);
    EXPECT_EQ(frame_size(0x500000 + 500 * 16), 32u);
    forget_frame_sizes();
    EXPECT_EQ(frame_size(0x500000 + 500 * 16), kUnknownFrame);
    EXPECT_TRUE(can_learn_frame_sizes());
}

// What each stack below found, from inside the "allocator" (the innermost function).
struct Found {
    bool first_walk_learns;  // set by the test: the first walk learns what it does not know
    StackWalk first_walk;
    CapturedStack unwound;  // by libunwind: the frames and slots every walk must find
    StackWalk learning_walk;
    StackWalk second_walk;
    CapturedStack walked;
};

constexpr uint32_t kDepth = 6;

// Stands for malloc: the caller context names the function that called it, where both the walks
// and libunwind's unwind start. Between a first walk (learning only if asked) and a last one,
// which learns nothing and walks by what is known, a walk learns what it needs.
__attribute__((noinline)) void allocator(Found* found) {
    const CallerContext caller = LEAKWRAP_CALLER();
    GuardScope guard;
    found->first_walk =
        walk_stack_by_frame_sizes(caller, kDepth, nullptr, found->first_walk_learns, &found->walked, nullptr);
    capture_stack_with_slots(caller, kDepth, &found->unwound);
    found->learning_walk = walk_stack_by_frame_sizes(caller, kDepth, nullptr, true, &found->walked, nullptr);
    found->second_walk = walk_stack_by_frame_sizes(caller, kDepth, nullptr, false, &found->walked, nullptr);
    asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
}

__attribute__((noinline)) void inner(Found* found) {
    allocator(found);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void middle(Found* found) {
    inner(found);
    asm volatile("" ::: "memory");
}

// Uses rbp as a general register, as optimized code may: it saves its caller's rbp, and the
// allocator sees garbage in the register.
__attribute__((noinline)) void inner_using_rbp(Found* found) {
    asm volatile("mov $0x1234, %%rbp" ::: "rbp");
    allocator(found);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) void with_dynamic_frame(Found* found, unsigned bytes, bool rbp_used_inside) {
    volatile char* scratch = static_cast<char*>(alloca(bytes));
    scratch[0] = 1;
    if (rbp_used_inside)
        inner_using_rbp(found);
    else
        inner(found);
    asm volatile("" ::: "memory");
}

// dynamic_bytes: 0 for a stack of fixed-size frames, else what a frame on it allocates with alloca.
__attribute__((noinline)) void outer(Found* found, unsigned dynamic_bytes, bool rbp_used_inside = false) {
    if (dynamic_bytes != 0)
        with_dynamic_frame(found, dynamic_bytes, rbp_used_inside);
    else
        middle(found);
    asm volatile("" ::: "memory");
}

// The last walk found the frames libunwind found, read from the same slots: the call-site cache
// takes a walk's slots as it takes libunwind's.
void expect_walked_as_unwound(const Found& found) {
    ASSERT_EQ(found.second_walk, StackWalk::kWalked);
    ASSERT_EQ(found.unwound.depth, kDepth);
    ASSERT_EQ(found.walked.depth, kDepth);
    ASSERT_TRUE(found.unwound.slots_known);
    ASSERT_TRUE(found.walked.slots_known);
    for (uint32_t i = 0; i < kDepth; ++i) {
        EXPECT_EQ(found.walked.frames[i], found.unwound.frames[i]) << i;
        EXPECT_EQ(found.walked.slots[i], found.unwound.slots[i]) << i;
    }
}

TEST_F(FrameSizes, AStackIsLearnedFromTheUnwindTablesOnceAndThenWalkedToLibunwindsFrames) {
    record_thread_stack_bounds();
    Found calls[2]{};
    volatile int count = 2;  // one call site, not unrolled: the same return addresses twice
    for (int i = 0; i < count; ++i) outer(&calls[i], 0);
    const Found& found = calls[0];
    EXPECT_EQ(found.first_walk, StackWalk::kNeedsLearning);
    EXPECT_EQ(found.learning_walk, StackWalk::kWalked);
    expect_walked_as_unwound(found);
    EXPECT_EQ(calls[1].first_walk, StackWalk::kWalked);  // nothing left to learn
    expect_walked_as_unwound(calls[1]);
}

// glibc's qsort calls the comparator from its own frames (msort's recursion, in libc.so.6, built
// with -O2 and no frame pointer): they are learned from libc's unwind table.
Found* g_found_in_comparator = nullptr;

int compare_and_allocate(const void* a, const void* b) {
    if (g_found_in_comparator != nullptr) {
        allocator(g_found_in_comparator);
        g_found_in_comparator = nullptr;
    }
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

TEST_F(FrameSizes, FramesOfLibcAreLearnedFromItsUnwindTable) {
    record_thread_stack_bounds();
    Found found{};
    g_found_in_comparator = &found;
    int values[64];
    for (int i = 0; i < 64; ++i) values[i] = (i * 37) % 64;
    qsort(values, 64, sizeof values[0], compare_and_allocate);
    ASSERT_EQ(g_found_in_comparator, nullptr);
    EXPECT_EQ(found.first_walk, StackWalk::kNeedsLearning);
    EXPECT_EQ(found.learning_walk, StackWalk::kWalked);
    expect_walked_as_unwound(found);
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(found.walked.frames[2]), &info), 0);
    EXPECT_NE(std::string(info.dli_fname).find("libc.so"), std::string::npos) << info.dli_fname;
}

// Copies of the plugin (unwind_table_plugin.cpp) in a directory of their own, loaded.
class PluginCopies {
public:
    PluginCopies() {
        std::ifstream plugin(UNWIND_TABLE_PLUGIN, std::ios::binary);
        image_.assign(std::istreambuf_iterator<char>(plugin), std::istreambuf_iterator<char>());
    }
    ~PluginCopies() {
        for (void* handle : handles_) dlclose(handle);
    }

    using CallThrough = void (*)(void (*)(void*), void*);
    CallThrough load(const std::string& name) {
        write(name, image_);
        void* handle = dlopen(path_of(name).c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return nullptr;
        handles_.push_back(handle);
        return reinterpret_cast<CallThrough>(dlsym(handle, "call_through"));
    }

    // Puts another file in the place of the copy loaded as `name`, as a package upgrade does
    // (a new file renamed over the old): the same code and program headers, another build-id.
    bool replace_with_other_build(const std::string& name) {
        static const char kBuildIdNote[] = "\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU";
        const std::size_t at = image_.find(std::string(kBuildIdNote, sizeof kBuildIdNote));
        if (at == std::string::npos) return false;
        std::string other = image_;
        other[at + 16] = static_cast<char>(other[at + 16] ^ 0xff);
        write(name + ".new", other);
        return std::rename(path_of(name + ".new").c_str(), path_of(name).c_str()) == 0;
    }

    // Deletes the file of the copy loaded as `name`, as an uninstall does.
    bool remove_file(const std::string& name) { return std::remove(path_of(name).c_str()) == 0; }

private:
    std::string path_of(const std::string& name) const { return (directory_.path() / name).string(); }

    void write(const std::string& name, const std::string& bytes) {
        std::ofstream(path_of(name), std::ios::binary) << bytes;
    }

    TemporaryDirectory directory_;
    std::string image_;
    std::vector<void*> handles_;
};

void allocate_through(void* found) { allocator(static_cast<Found*>(found)); }

// Descriptors open on a module's file: a shared object, or this program.
int open_module_files() {
    const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe");
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code unreadable;
        const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), unreadable);
        count += !unreadable && (target == program || target.string().find(".so") != std::string::npos);
    }
    return count;
}

// A module's rules are read from its file only while that file is the one loaded: once another
// file took its place on disk, or it was deleted, its frames are left to libunwind, never walked
// by rules read from a file they do not come from. No file stays open after a walk.
TEST_F(FrameSizes, AModuleIsReadFromItsOwnFileNotFromAnotherPutInItsPlace) {
    record_thread_stack_bounds();
    PluginCopies copies;
    const PluginCopies::CallThrough kept = copies.load("kept.so");
    const PluginCopies::CallThrough replaced = copies.load("replaced.so");
    const PluginCopies::CallThrough deleted = copies.load("deleted.so");
    ASSERT_NE(kept, nullptr);
    ASSERT_NE(replaced, nullptr);
    ASSERT_NE(deleted, nullptr);
    ASSERT_TRUE(copies.replace_with_other_build("replaced.so"));
    ASSERT_TRUE(copies.remove_file("deleted.so"));
    Found through_kept{}, through_replaced{}, through_deleted{};
    kept(allocate_through, &through_kept);
    replaced(allocate_through, &through_replaced);
    deleted(allocate_through, &through_deleted);
    EXPECT_EQ(open_module_files(), 0);
    EXPECT_EQ(through_kept.learning_walk, StackWalk::kWalked);
    expect_walked_as_unwound(through_kept);
    for (const Found* found : {&through_replaced, &through_deleted}) {
        EXPECT_EQ(found->learning_walk, StackWalk::kNotWalkable);
        EXPECT_EQ(found->second_walk, StackWalk::kNotWalkable);
        EXPECT_EQ(found->unwound.depth, kDepth);  // libunwind still unwinds them
    }
}

// Its size differs from call to call: it is walked through its frame pointer, not by a size;
// with rbp_used_inside, the frame pointer is found where the frame inside saved it.
class FrameSizesDynamic : public FrameSizes, public ::testing::WithParamInterface<bool> {};

TEST_P(FrameSizesDynamic, AFrameThatAllocatesOnTheStackIsWalkedThroughItsFramePointer) {
    record_thread_stack_bounds();
    Found calls[3]{};
    const unsigned dynamic_bytes[3] = {64, 4096 + 48, 512};
    volatile int count = 3;  // one call site, not unrolled: the same return addresses each time
    for (int i = 0; i < count; ++i) outer(&calls[i], dynamic_bytes[i], GetParam());
    EXPECT_EQ(calls[0].first_walk, StackWalk::kNeedsLearning);
    EXPECT_EQ(calls[0].learning_walk, StackWalk::kWalked);
    for (const Found& found : calls) expect_walked_as_unwound(found);
    for (int i = 1; i < 3; ++i) EXPECT_EQ(calls[i].first_walk, StackWalk::kWalked) << i;
    // The second frame walked is with_dynamic_frame's (where inner returns to).
    EXPECT_EQ(frame_size(calls[0].walked.frames[1]), kFramePointerFrame);
    if (GetParam()) {
        EXPECT_NE(saved_rbp_slot(frame_size(calls[0].walked.frames[0])), 0u);
    }
}

// A walk that may learn reads the rule of each frame it does not know from the unwind table and
// goes on: the frames and slots it finds are libunwind's, whether the frames are sized, use a
// frame pointer, or reach it through a saved rbp.
TEST_P(FrameSizesDynamic, AWalkLearnsTheFramesItDoesNotKnowOnItsWay) {
    record_thread_stack_bounds();
    for (const unsigned dynamic_bytes : {0u, 64u, 4096u + 48}) {
        forget_frame_sizes();
        Found found{};
        found.first_walk_learns = true;
        outer(&found, dynamic_bytes, GetParam());
        EXPECT_EQ(found.first_walk, StackWalk::kWalked) << dynamic_bytes;
        expect_walked_as_unwound(found);
    }
}

INSTANTIATE_TEST_SUITE_P(RbpKeptOrUsedInside, FrameSizesDynamic, ::testing::Bool());

}  // namespace
}  // namespace leakwrap
