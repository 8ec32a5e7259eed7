// The parser and the stack table: each site's native frames and Ruby backtrace, in the current
// layout, whose Ruby frames are records shared between stacks, and in layout 5, which kept them
// inline.
#include "sample_segments.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace leakwrap {
namespace {

using namespace testing;

// Every layout this reader reads: the current one and layout 5, whose Ruby frames were inline.
constexpr uint32_t kReadableLayouts[] = {5, 6, 7, layout::kLayoutVersion};

// The innermost Ruby frame of the stack of site kFirst, which has one.
void corrupt_ruby_file(std::vector<std::byte>& bytes, uint32_t file) {
    patch<layout::RubyFrame>(bytes, testing::ruby_frame_offset(bytes, kFirst, 0),
                             [file](layout::RubyFrame& frame) { frame.file = file; });
}

TEST(ParseSegment, RejectsAStackDeeperThanMaxDepth) {
    auto bytes = typical_builder().build();
    patch<layout::StackRecord>(bytes, testing::stack_offset(bytes, kFirst),
                               [](layout::StackRecord& stack) { stack.native_depth = 9; });
    // The stack follows the record of its one Ruby frame.
    EXPECT_PRED2(contains, parse_error(bytes), "site 88's stack at 16 has 9 native frames");
}

TEST(ParseSegment, RejectsAStackWithMoreRubyFramesThanMaxRubyDepth) {
    auto bytes = typical_builder().build();
    patch<layout::StackRecord>(bytes, testing::stack_offset(bytes, kFirst),
                               [](layout::StackRecord& stack) { stack.ruby_depth = 9; });
    EXPECT_PRED2(contains, parse_error(bytes), "has 9 Ruby frames, more than max_ruby_depth 8");
}

TEST(ParseSegment, RejectsAStackOutsideTheStackTable) {
    auto bytes = typical_builder().build();
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, kFirst),
                              [](layout::SiteRecord& site) { site.stack = 0x10000000u; });
    EXPECT_PRED2(contains, parse_error(bytes), "lies outside the");
}

TEST(ParseSegment, RejectsAStackRunningPastTheTable) {
    auto builder = typical_builder();
    builder.stack_slack = 0;
    auto bytes = builder.build();
    const uint32_t last = kFirst + static_cast<uint32_t>(builder.sites.size()) - 1;
    patch<layout::StackRecord>(bytes, testing::stack_offset(bytes, last),
                               [](layout::StackRecord& stack) { stack.native_depth = 8; });
    EXPECT_PRED2(contains, parse_error(bytes), "runs past the end of the");
}

TEST(ParseSegment, LeavesOutASiteWhoseStackIsNotReady) {
    auto builder = typical_builder();
    builder.sites[0].stack_state = layout::kEmpty;
    const auto snapshot = parse_segment(builder.build());
    for (const Site& site : snapshot.sites) EXPECT_NE(site.id, kFirst);
}

// The writer's sites name stacks in any order, several sites one stack (a stack in two size
// classes); the parser numbers its store by table order, not by the order sites name them.
TEST(ParseSegment, GivesEachSiteTheStackItNamesWhateverTheOrder) {
    auto builder = typical_builder();
    builder.sites.push_back({.allocs = 1, .alloc_bytes = 8, .frames = {0x401400, 0x401410}});
    builder.sites[2].ruby_file = "app/jobs/sweep.rb";
    builder.sites[2].ruby_line = 3;
    auto bytes = builder.build();
    const auto stack_of = [&](uint32_t slot) {
        layout::SiteRecord record;
        std::memcpy(&record, bytes.data() + testing::site_offset(bytes, slot), sizeof(record));
        return record.stack;
    };
    // The first site names the last stack, the last site the first, the middle one the last too.
    const uint32_t first_stack = stack_of(kFirst), last_stack = stack_of(kFirst + 2);
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, kFirst),
                              [&](layout::SiteRecord& site) { site.stack = last_stack; });
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, kFirst + 1),
                              [&](layout::SiteRecord& site) { site.stack = last_stack; });
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, kFirst + 2),
                              [&](layout::SiteRecord& site) { site.stack = first_stack; });
    const auto snapshot = parse_segment(bytes);
    const auto site = [&](uint32_t id) {
        return *std::find_if(snapshot.sites.begin(), snapshot.sites.end(), [&](const Site& s) { return s.id == id; });
    };
    const std::vector<uint64_t> sweep = {0x401400, 0x401410}, user = {0x401234, 0x401500, 0x7f0000001000};
    for (const uint32_t id : {kFirst, kFirst + 1}) {
        EXPECT_TRUE(std::ranges::equal(site(id).frames(), sweep)) << id;
        ASSERT_EQ(site(id).ruby().size(), 1u);
        EXPECT_EQ(site(id).ruby()[0].file, "app/jobs/sweep.rb");
        EXPECT_EQ(site(id).stack(), site(kFirst).stack()) << "one stack, stored once";
    }
    EXPECT_TRUE(std::ranges::equal(site(kFirst + 2).frames(), user));
    EXPECT_EQ(site(kFirst + 2).ruby()[0].line, 42u);
    EXPECT_EQ(site(kFirst + 2).module_generation(), 1u);
    // The middle site's own stack is named by no site, and so not stored.
    EXPECT_EQ(snapshot.stack_stores.at(0)->stacks.size(), 2u);
}

TEST(ParseSegment, ReadsARubyBacktraceInnermostFirstAndTheReducedFlag) {
    auto builder = typical_builder();
    builder.sites[0].ruby_file = "app/controllers/leak_controller.rb";
    builder.sites[0].ruby_line = 7;
    builder.sites[0].outer_ruby = {{"actionpack/metal.rb", 190}, {"puma/server.rb", 444}};
    builder.sites[1].reduced = true;
    const auto snapshot = parse_segment(builder.build());
    const Site& site =
        *std::find_if(snapshot.sites.begin(), snapshot.sites.end(), [](const Site& s) { return s.id == kFirst; });
    ASSERT_EQ(site.ruby().size(), 3u);
    EXPECT_EQ(site.ruby()[0].file, "app/controllers/leak_controller.rb");
    EXPECT_EQ(site.ruby()[0].line, 7u);
    EXPECT_EQ(site.ruby()[2].file, "puma/server.rb");
    EXPECT_EQ(site.ruby()[2].line, 444u);
    EXPECT_FALSE(site.reduced());
    EXPECT_TRUE(std::find_if(snapshot.sites.begin(), snapshot.sites.end(), [](const Site& s) {
                    return s.id == kFirst + 1;
                })->reduced());
}

// Layout 5 kept each stack's Ruby frames inline; the same sites laid out so must read the same.
TEST(ParseSegment, ReadsThePreviousLayoutWithItsRubyFramesInline) {
    auto previous = ruby_builder();
    previous.layout_version = 5;
    const Snapshot expected = parse_segment(ruby_builder().build());
    const Snapshot read = parse_segment(previous.build());
    ASSERT_EQ(read.sites.size(), expected.sites.size());
    std::size_t ruby_frames = 0;
    for (std::size_t i = 0; i < read.sites.size(); ++i) {
        const Site& site = read.sites[i];
        const Site& want = expected.sites[i];
        EXPECT_EQ(site.id, want.id);
        EXPECT_EQ(site.counters(), want.counters()) << "site " << site.id;
        EXPECT_TRUE(std::ranges::equal(site.frames(), want.frames())) << "site " << site.id;
        EXPECT_TRUE(std::ranges::equal(site.ruby(), want.ruby())) << "site " << site.id;
        EXPECT_EQ(site.module_generation(), want.module_generation()) << "site " << site.id;
        EXPECT_EQ(site.reduced(), want.reduced()) << "site " << site.id;
        ruby_frames += site.ruby().size();
    }
    EXPECT_EQ(ruby_frames, 3u + 3 + 2 + 3) << "the builder's sites have their Ruby frames";
    EXPECT_EQ(read.bins, expected.bins);
    EXPECT_EQ(read.totals, expected.totals);
}

TEST(ParseSegment, RejectsALayout5StackWhoseRubyFramesRunPastTheTable) {
    auto builder = ruby_builder();
    builder.layout_version = 5;
    builder.stack_slack = 0;
    auto bytes = builder.build();
    const uint32_t last = kFirst + static_cast<uint32_t>(builder.sites.size()) - 1;
    patch<layout::StackRecordV5>(bytes, testing::stack_offset(bytes, last),
                                 [](layout::StackRecordV5& stack) { ++stack.ruby_depth; });
    EXPECT_PRED2(contains, parse_error(bytes), "site 92's stack at 200 runs past the end of the");
}

TEST(ParseSegment, ReadsRubyBacktracesThatShareTheirOuterFrames) {
    const auto bytes = ruby_builder().build();
    // The builder shares the records as the writer does, so the reader meets them again.
    const auto frame_at = [&](uint32_t slot, uint32_t index) { return testing::ruby_frame_offset(bytes, slot, index); };
    EXPECT_EQ(frame_at(kFirst + 1, 1), frame_at(kFirst, 1));
    EXPECT_EQ(frame_at(kFirst + 2, 1), frame_at(kFirst, 2));
    EXPECT_EQ(frame_at(kFirst + 4, 0), frame_at(kFirst, 0));

    const auto snapshot = parse_segment(bytes);
    const auto backtrace = [&](uint32_t slot) {
        const auto ruby = site_in_slot(snapshot, slot).ruby();
        return std::vector<RubyLocation>(ruby.begin(), ruby.end());
    };
    const RubyLocation controller{"app/controllers/users_controller.rb", 7};
    const RubyLocation server{"puma/server.rb", 444};
    EXPECT_EQ(backtrace(kFirst), (std::vector<RubyLocation>{{"app/models/user.rb", 42}, controller, server}));
    EXPECT_EQ(backtrace(kFirst + 1), (std::vector<RubyLocation>{{"app/models/post.rb", 9}, controller, server}));
    EXPECT_EQ(backtrace(kFirst + 2), (std::vector<RubyLocation>{{"lib/jobs.rb", 3}, server}));
    EXPECT_TRUE(backtrace(kFirst + 3).empty());
    EXPECT_EQ(backtrace(kFirst + 4), backtrace(kFirst));
    EXPECT_TRUE(site_in_slot(snapshot, kFirst + 1).reduced());
}

// One corruption of ruby_builder()'s layout 6 segment, and the whole message it must draw.
struct RubyFrameCorruption {
    const char* name;
    void (*corrupt)(std::vector<std::byte>&);
    const char* expected_message;
};

void PrintTo(const RubyFrameCorruption& corruption, std::ostream* out) { *out << corruption.name; }

void patch_stack(std::vector<std::byte>& bytes, uint32_t slot, void (*change)(layout::StackRecord&)) {
    patch<layout::StackRecord>(bytes, testing::stack_offset(bytes, slot), change);
}

// Ruby frame `index` (0: the innermost) of the stack of the site in `slot`.
void patch_frame(std::vector<std::byte>& bytes, uint32_t slot, uint32_t index,
                 void (*change)(layout::RubyFrameRecord&)) {
    patch<layout::RubyFrameRecord>(bytes, testing::ruby_frame_offset(bytes, slot, index), change);
}

class ParseSegmentCorruptRubyFrames : public ::testing::TestWithParam<RubyFrameCorruption> {};

TEST_P(ParseSegmentCorruptRubyFrames, IsRejectedWithAClearMessage) {
    auto bytes = ruby_builder().build();
    GetParam().corrupt(bytes);
    EXPECT_EQ(parse_error(bytes), GetParam().expected_message);
}

// References are offsets in the table divided by 8: the record at 32 is reference 4.
INSTANTIATE_TEST_SUITE_P(
    EveryChainRule, ParseSegmentCorruptRubyFrames,
    ::testing::Values(
        RubyFrameCorruption{"StackNamingARecordOutsideTheTable",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 1000; }); },
                            "Ruby frame record at 8000 of site 88's stack at 48 lies outside the 272-byte stack table"},
        RubyFrameCorruption{"CallerOutsideTheTable",
                            [](auto& bytes) { patch_frame(bytes, kFirst, 1, [](auto& frame) { frame.caller = 34; }); },
                            "Ruby frame record at 272 of site 88's stack at 48 lies outside the 272-byte stack table"},
        RubyFrameCorruption{"RecordRunningPastTheTable",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 33; }); },
                            "Ruby frame record at 264 of site 88's stack at 48 runs past the end of the 272-byte "
                            "stack table"},
        // Past stacks_used: a record the writer never wrote, or one this copy did not take.
        RubyFrameCorruption{"RecordNeverWritten",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 31; }); },
                            "Ruby frame record at 248 of site 88's stack at 48 has depth 0, but the stack has 3 "
                            "Ruby frames"},
        RubyFrameCorruption{"FewerRubyFramesThanTheBacktrace",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 2; }); },
                            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the stack has 2 Ruby "
                            "frames"},
        RubyFrameCorruption{"MoreRubyFramesThanTheBacktrace",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 4; }); },
                            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the stack has 4 Ruby "
                            "frames"},
        RubyFrameCorruption{
            "RubyFramesWithoutARecord",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = layout::kNoRubyFrame; }); },
            "site 88's stack at 48 has 3 Ruby frames but names no Ruby frame record"},
        RubyFrameCorruption{"ARecordWithoutRubyFrames",
                            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 0; }); },
                            "site 88's stack at 48 has no Ruby frames but names a Ruby frame record at 32"},
        RubyFrameCorruption{"DepthsNotFallingByOne",
                            [](auto& bytes) { patch_frame(bytes, kFirst, 1, [](auto& frame) { frame.depth = 1; }); },
                            "Ruby frame record at 16 of site 88's stack at 48 has depth 1, but the frame it calls "
                            "has depth 3"},
        RubyFrameCorruption{"RecordCallingItself",
                            [](auto& bytes) { patch_frame(bytes, kFirst, 0, [](auto& frame) { frame.caller = 4; }); },
                            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the frame it calls "
                            "has depth 3"},
        // A cycle through the outermost frame.
        RubyFrameCorruption{"OutermostNamingACaller",
                            [](auto& bytes) { patch_frame(bytes, kFirst, 2, [](auto& frame) { frame.caller = 2; }); },
                            "Ruby frame record at 0 of site 88's stack at 48 has depth 1 but names a caller at 16"},
        RubyFrameCorruption{"InnerRecordNamingNoCaller",
                            [](auto& bytes) {
                                patch_frame(bytes, kFirst, 1, [](auto& frame) { frame.caller = layout::kNoRubyFrame; });
                            },
                            "Ruby frame record at 16 of site 88's stack at 48 has depth 2 but names no caller"},
        // Site 89's backtrace reaches the record at 32, checked with site 88's, one frame too deep.
        RubyFrameCorruption{
            "SharedRecordAtAnotherDepth",
            [](auto& bytes) { patch_frame(bytes, kFirst + 1, 0, [](auto& frame) { frame.caller = 4; }); },
            "Ruby frame record at 32 of site 89's stack at 88 has depth 3, but the frame it calls "
            "has depth 3"},
        // Found by the first stack that reaches it, although four name it.
        RubyFrameCorruption{
            "SharedRecordWithAFileBeyondThePool",
            [](auto& bytes) { patch_frame(bytes, kFirst, 2, [](auto& frame) { frame.frame.file = 5000; }); },
            "Ruby frame record at 0 of site 88's stack at 48: Ruby file string at offset 5000 has no "
            "NUL inside the 1024-byte string pool"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(ParseSegment, RejectsARubyFileWithoutANulBeforeThePoolEnds) {
    for (const uint32_t version : kReadableLayouts) {
        SCOPED_TRACE("layout " + std::to_string(version));
        SegmentBuilder builder;
        builder.layout_version = version;
        builder.strings_capacity = 64;  // 28 bytes hold the exe path and the command line
        builder.sites = {{.allocs = 1, .alloc_bytes = 8, .ruby_file = "a.rb"}};
        auto bytes = builder.build();
        const auto header = [&] {
            layout::Header h;
            std::memcpy(&h, bytes.data(), sizeof(h));
            return h;
        }();
        // Fill the pool's tail with text and point a site at it.
        std::memset(bytes.data() + header.strings_offset + 40, 'x', 24);
        corrupt_ruby_file(bytes, 40);
        EXPECT_PRED2(contains, parse_error(bytes), "Ruby file string at offset 40 has no NUL");

        // One NUL at the very end makes it a string again.
        bytes[header.strings_offset + 63] = std::byte{0};
        EXPECT_EQ(parse_error(bytes), "");
        EXPECT_EQ(site_in_slot(parse_segment(bytes), kFirst).ruby()[0].file, std::string(23, 'x'));
    }
}

TEST(ParseSegment, RejectsARubyFileBeyondThePool) {
    for (const uint32_t version : kReadableLayouts) {
        SCOPED_TRACE("layout " + std::to_string(version));
        auto builder = typical_builder();
        builder.layout_version = version;
        auto bytes = builder.build();
        corrupt_ruby_file(bytes, 5000);
        EXPECT_PRED2(contains, parse_error(bytes), "Ruby file string at offset 5000 has no NUL");
    }
}

TEST(ParseSegment, RejectsARubyFileAtThePoolEnd) {
    for (const uint32_t version : kReadableLayouts) {
        SCOPED_TRACE("layout " + std::to_string(version));
        auto builder = typical_builder();
        builder.layout_version = version;
        auto bytes = builder.build();
        corrupt_ruby_file(bytes, builder.strings_capacity);
        EXPECT_PRED2(contains, parse_error(bytes), "Ruby file string at offset 1024 has no NUL");
    }
}

}  // namespace
}  // namespace leakwrap
