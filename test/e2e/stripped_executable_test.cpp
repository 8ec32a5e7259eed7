// Frames of a stripped non-PIE executable, whose only symbols are its dynamic ones: among them
// an undefined strcmp whose value is its canonical PLT entry inside the executable, and one
// defined function. A frame is named only after a defined function whose extent holds it; any
// other says ?? with the module and the offset in it.
#include <gtest/gtest.h>

#include <filesystem>

#include "ground_truth.h"
#include "harness.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::stripped_no_pie;

bool in_program(const nlohmann::json& frame) {
    return frame.at("module").is_string() &&
           std::filesystem::path(frame.at("module").get<std::string>()).filename() == "stripped_no_pie";
}

TEST(StrippedNonPieExecutable, FramesAreNamedOnlyAfterDefinedFunctionsThatHoldThem) {
    Target target({paths::program("stripped_no_pie")}, Environment::profiled());
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(target.release_and_wait(), 0);

    std::size_t program_frames = 0, leak_block_blocks = 0, exported_last_blocks = 0;
    for (const auto& site : report.at("sites")) {
        for (const auto& frame : site.at("frames")) {
            if (!in_program(frame)) continue;
            ++program_frames;
            EXPECT_TRUE(frame.at("function").is_null() || frame.at("function") == "exported_last") << frame;
            if (frame.at("function").is_null()) {
                EXPECT_TRUE(frame.contains("module_offset")) << frame;
            }
        }
        const auto& frames = site.at("frames");
        if (frames.empty() || !in_program(frames[0]) ||
            site.at("alloc_bytes") != kBlockSize * site.at("allocs").get<std::size_t>())
            continue;
        // The innermost frame is the caller of malloc: leak_block (called from as many sites in
        // main as the compiler unrolls), or exported_last.
        const auto blocks = site.at("live_blocks").get<std::size_t>();
        (frames[0].at("function").is_null() ? leak_block_blocks : exported_last_blocks) += blocks;
    }
    EXPECT_GT(program_frames, kBlocks) << report.dump(1);
    EXPECT_EQ(leak_block_blocks, kBlocks) << report.dump(1);
    EXPECT_EQ(exported_last_blocks, 1u) << report.dump(1);
}

}  // namespace
}  // namespace leakwrap::e2e
