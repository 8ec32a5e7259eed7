#include "symbolizer.h"

#include <leakwrap/segment_layout.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

namespace leakwrap {
namespace {

__attribute__((noinline)) uint64_t caller_return_address() {
    return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

// Not a tail call, so the return address lies inside this function, on this line; noclone
// keeps the optimizer from renaming it.
constexpr int kMarkerCallLine = __LINE__ + 2;
__attribute__((noinline, noclone)) uint64_t symbolizer_test_marker() {
    volatile uint64_t address = caller_return_address();
    return address;
}

// The same through a function the compiler must inline (even unoptimized): the return address
// lies in code of the inlined function, inside the one it was inlined into. The count keeps the
// code apart from symbolizer_test_marker's (identical code is folded into one function).
volatile int g_inlined_marker_calls = 0;
constexpr int kInlinedCallLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t inlined_into_marker() {
    g_inlined_marker_calls = g_inlined_marker_calls + 1;
    return caller_return_address();
}

constexpr int kCallOfInlinedLine = __LINE__ + 2;
__attribute__((noinline, noclone)) uint64_t symbolizer_test_inlining_marker() {
    volatile uint64_t address = inlined_into_marker();
    return address;
}

std::vector<uint8_t> build_id_of(const dl_phdr_info& info) {
    for (int i = 0; i < info.dlpi_phnum; ++i) {
        const auto& segment = info.dlpi_phdr[i];
        if (segment.p_type != PT_NOTE) continue;
        const auto* note = reinterpret_cast<const unsigned char*>(info.dlpi_addr + segment.p_vaddr);
        const auto* end = note + segment.p_memsz;
        while (note + sizeof(ElfW(Nhdr)) <= end) {
            const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(note);
            const auto* description = note + sizeof(ElfW(Nhdr)) + ((header->n_namesz + 3) & ~3u);
            if (header->n_type == NT_GNU_BUILD_ID)
                return std::vector<uint8_t>(description, description + header->n_descsz);
            note = description + ((header->n_descsz + 3) & ~3u);
        }
    }
    return {};
}

// The module record the preload would have written for the module holding `address`.
Module module_holding(uint64_t address) {
    struct Search {
        uint64_t address;
        Module module;
        bool found = false;
    } result{address, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* context) {
            auto& search = *static_cast<Search*>(context);
            uint64_t start = UINT64_MAX, end = 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto& segment = info->dlpi_phdr[i];
                if (segment.p_type != PT_LOAD) continue;
                start = std::min<uint64_t>(start, info->dlpi_addr + segment.p_vaddr);
                end = std::max<uint64_t>(end, info->dlpi_addr + segment.p_vaddr + segment.p_memsz);
            }
            if (search.address < start || search.address >= end) return 0;
            search.module.path = info->dlpi_name[0] != '\0' ? std::string(info->dlpi_name)
                                                            : std::filesystem::read_symlink("/proc/self/exe").string();
            search.module.load_bias = info->dlpi_addr;
            search.module.start = start;
            search.module.end = end;
            search.module.load_generation = 1;
            search.module.unload_generation = layout::kStillLoaded;
            search.module.build_id = build_id_of(*info);
            search.found = true;
            return 1;
        },
        &result);
    if (!result.found) throw std::runtime_error("no module holds the address");
    return result.module;
}

class SymbolizerTest : public ::testing::Test {
protected:
    const uint64_t return_address_ = symbolizer_test_marker();
    const Module test_binary_ = module_holding(return_address_);
};

TEST_F(SymbolizerTest, ResolvesAReturnAddressToItsCallingFunctionAndLine) {
    ASSERT_FALSE(test_binary_.build_id.empty()) << "the linker added no build-id";
    Symbolizer symbolizer({test_binary_}, {});
    const ResolvedFrame& frame = symbolizer.resolve(return_address_, 1).back();
    EXPECT_EQ(frame.address, return_address_);
    EXPECT_EQ(frame.function, "leakwrap::(anonymous namespace)::symbolizer_test_marker()");
    ASSERT_TRUE(frame.file.has_value()) << frame.note;
    EXPECT_EQ(std::filesystem::path(frame.file->str()).filename(), "symbolizer_test.cpp");
    EXPECT_EQ(frame.line, kMarkerCallLine);
    EXPECT_EQ(frame.module, test_binary_.path);
    EXPECT_EQ(frame.note, "");
}

TEST_F(SymbolizerTest, ExpandsAnInlinedFunctionIntoAFrameOfItsOwnWithTheCallersCallLine) {
    const uint64_t address = symbolizer_test_inlining_marker();
    Symbolizer symbolizer({test_binary_}, {});
    const AddressFrames& frames = symbolizer.resolve(address, 1);
    ASSERT_EQ(frames.size(), 2u);
    const ResolvedFrame& inlined = frames[0];
    EXPECT_TRUE(inlined.inlined);
    // DWARF gives a function of internal linkage no linkage name to demangle: its name alone.
    EXPECT_EQ(inlined.function, "inlined_into_marker");
    ASSERT_TRUE(inlined.file.has_value());
    EXPECT_EQ(std::filesystem::path(inlined.file->str()).filename(), "symbolizer_test.cpp");
    EXPECT_EQ(inlined.line, kInlinedCallLine);
    const ResolvedFrame& caller = frames[1];
    EXPECT_FALSE(caller.inlined);
    EXPECT_EQ(caller.function, "leakwrap::(anonymous namespace)::symbolizer_test_inlining_marker()");
    EXPECT_EQ(caller.file, inlined.file);
    EXPECT_EQ(caller.line, kCallOfInlinedLine);
    // One address: both frames say where the code is alike.
    for (const ResolvedFrame& frame : frames) {
        EXPECT_EQ(frame.address, address);
        EXPECT_EQ(frame.module, test_binary_.path);
        EXPECT_EQ(frame.module_offset, address - test_binary_.load_bias);
        EXPECT_EQ(frame.note, "");
    }
}

TEST_F(SymbolizerTest, GivesOneFrameForCodeNothingWasInlinedInto) {
    Symbolizer symbolizer({test_binary_}, {});
    EXPECT_EQ(symbolizer.resolve(return_address_, 1).size(), 1u);
    EXPECT_FALSE(symbolizer.resolve(return_address_, 1).back().inlined);
}

TEST_F(SymbolizerTest, DropsSymbolVersions) {
    // In libc's symbol table this is __libc_start_main@@GLIBC_2.34.
    const auto entry = reinterpret_cast<uint64_t>(::dlsym(RTLD_DEFAULT, "__libc_start_main"));
    ASSERT_NE(entry, 0u);
    Symbolizer symbolizer({module_holding(entry)}, {});
    EXPECT_EQ(symbolizer.resolve(entry + 1, 1).back().function, "__libc_start_main");
}

TEST_F(SymbolizerTest, CachesResultsPerAddress) {
    Symbolizer symbolizer({test_binary_}, {});
    EXPECT_EQ(&symbolizer.resolve(return_address_, 1), &symbolizer.resolve(return_address_, 1));
}

TEST_F(SymbolizerTest, RefusesSymbolsFromAFileWithAnotherBuildId) {
    Module changed = test_binary_;
    changed.build_id.assign(20, 0xab);
    Symbolizer symbolizer({changed}, {});
    const ResolvedFrame& frame = symbolizer.resolve(return_address_, 1).back();
    EXPECT_FALSE(frame.function.has_value());
    EXPECT_EQ(frame.module, test_binary_.path);
    EXPECT_EQ(frame.module_offset, return_address_ - test_binary_.load_bias);
    EXPECT_NE(frame.note.str().find("build-id mismatch"), std::string::npos) << frame.note;
}

TEST_F(SymbolizerTest, KeepsModuleAndOffsetWhenTheFileIsGone) {
    Module gone = test_binary_;
    gone.path = "/nonexistent/libgone.so";
    Symbolizer symbolizer({gone}, {});
    const ResolvedFrame& frame = symbolizer.resolve(return_address_, 1).back();
    EXPECT_FALSE(frame.function.has_value());
    EXPECT_EQ(frame.module, "/nonexistent/libgone.so");
    EXPECT_TRUE(frame.module_offset.has_value());
    EXPECT_NE(frame.note.str().find("cannot read /nonexistent/libgone.so"), std::string::npos) << frame.note;
}

TEST_F(SymbolizerTest, NamesPathlessModulesWithoutOpeningThem) {
    Symbolizer symbolizer(
        {{.path = "linux-vdso.so.1", .start = 0x1000, .end = 0x2000, .unload_generation = layout::kStillLoaded}}, {});
    const ResolvedFrame& frame = symbolizer.resolve(0x1800, 0).back();
    EXPECT_EQ(frame.module, "linux-vdso.so.1");
    EXPECT_FALSE(frame.function.has_value());
}

TEST_F(SymbolizerTest, PicksTheModuleMappedWhenTheStackWasCaptured) {
    // Same range, two lifetimes: generations [1, 3) and [3, still loaded).
    Module earlier = {.path = "/old/libplugin.so",
                      .load_bias = 0x10000,
                      .start = 0x10000,
                      .end = 0x20000,
                      .load_generation = 1,
                      .unload_generation = 3};
    Module later = {.path = "/new/libplugin.so",
                    .load_bias = 0x10000,
                    .start = 0x10000,
                    .end = 0x20000,
                    .load_generation = 3,
                    .unload_generation = layout::kStillLoaded};
    Symbolizer symbolizer({earlier, later}, {});
    EXPECT_EQ(symbolizer.resolve(0x10100, 2).back().module, "/old/libplugin.so");
    EXPECT_EQ(symbolizer.resolve(0x10100, 3).back().module, "/new/libplugin.so");
    // A generation no record covers (captured mid-rescan) falls back to the latest load.
    EXPECT_EQ(symbolizer.resolve(0x10100, 0).back().module, "/new/libplugin.so");
}

TEST_F(SymbolizerTest, LooksUpTheCallNotTheInstructionAfterIt) {
    // A return address equal to a module's end still belongs to the call at its last byte.
    Symbolizer symbolizer(
        {{.path = "[tail]", .start = 0x1000, .end = 0x2000, .unload_generation = layout::kStillLoaded}}, {});
    EXPECT_EQ(symbolizer.resolve(0x2000, 0).back().module, "[tail]");
    EXPECT_FALSE(symbolizer.resolve(0x1000, 0).back().module.has_value());
}

TEST_F(SymbolizerTest, SaysSoWhenNoModuleMapsAnAddress) {
    Symbolizer symbolizer({}, {});
    const ResolvedFrame& frame = symbolizer.resolve(0xdead, 0).back();
    EXPECT_FALSE(frame.module.has_value());
    EXPECT_FALSE(frame.function.has_value());
    EXPECT_NE(frame.note, "");
}

}  // namespace
}  // namespace leakwrap
