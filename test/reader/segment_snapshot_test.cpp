#include "segment_snapshot.h"
#include "segment_builder.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace leakwrap {
namespace {

using testing::BuiltModule;
using testing::BuiltSite;
using testing::patch;
using testing::patch_header;
using testing::SegmentBuilder;

SegmentBuilder typical_builder() {
    SegmentBuilder builder;
    builder.overflow_site = {.allocs = 3, .frees = 1, .alloc_bytes = 300, .free_bytes = 100};
    builder.sites = {
        {.allocs = 10,
         .frees = 4,
         .alloc_bytes = 1000,
         .free_bytes = 400,
         .frames = {0x401234, 0x401500, 0x7f0000001000},
         .module_generation = 1},
        {.allocs = 5, .frees = 5, .alloc_bytes = 50, .free_bytes = 50, .frames = {0x401300}},
    };
    builder.modules = {
        {.path = "/usr/bin/leaky",
         .load_bias = 0,
         .start = 0x400000,
         .end = 0x402000,
         .build_id = {0xde, 0xad, 0xbe, 0xef}},
        {.path = "/lib/libc.so.6",
         .load_bias = 0x7f0000000000,
         .start = 0x7f0000000000,
         .end = 0x7f0000100000,
         .load_generation = 1,
         .unload_generation = 3},
    };
    return builder;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Runs the parser and returns its message, or "" if it accepted the bytes.
std::string parse_error(const std::vector<std::byte>& bytes) {
    try {
        parse_segment(bytes);
    } catch (const SegmentError& error) {
        return error.what();
    }
    return "";
}

TEST(ParseSegment, ReadsEveryFieldOfAValidSegment) {
    const auto snapshot = parse_segment(typical_builder().build());

    EXPECT_EQ(snapshot.pid, testing::kAbsentPid);
    EXPECT_EQ(snapshot.parent_pid, 1);
    EXPECT_EQ(snapshot.start_time_ticks, 12345u);
    EXPECT_EQ(snapshot.created_unix_ns, 1700000000000000000ull);
    EXPECT_EQ(snapshot.boot_id, "00000000-1111-2222-3333-444444444444");
    EXPECT_EQ(snapshot.exe, "/usr/bin/leaky");
    EXPECT_EQ(snapshot.command_line, "leaky --fast");
    EXPECT_EQ(snapshot.max_depth, 8u);
    EXPECT_EQ(snapshot.site_capacity, 16u);
    EXPECT_EQ(snapshot.sites_claimed, 3u);

    ASSERT_EQ(snapshot.modules.size(), 2u);
    EXPECT_EQ(snapshot.modules[0].path, "/usr/bin/leaky");
    EXPECT_EQ(snapshot.modules[0].build_id, (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
    EXPECT_EQ(snapshot.modules[0].unload_generation, layout::kStillLoaded);
    EXPECT_EQ(snapshot.modules[1].load_bias, 0x7f0000000000u);
    EXPECT_EQ(snapshot.modules[1].end, 0x7f0000100000u);
    EXPECT_EQ(snapshot.modules[1].load_generation, 1u);
    EXPECT_EQ(snapshot.modules[1].unload_generation, 3u);

    ASSERT_EQ(snapshot.sites.size(), 3u);
    const Site& overflow = snapshot.sites[0];
    EXPECT_TRUE(overflow.overflow);
    EXPECT_EQ(overflow.id, 0u);
    EXPECT_TRUE(overflow.frames.empty());
    const Site& first = snapshot.sites[1];
    EXPECT_FALSE(first.overflow);
    EXPECT_EQ(first.id, 1u);
    EXPECT_EQ(first.live_blocks, 6u);
    EXPECT_EQ(first.live_bytes, 600u);
    EXPECT_EQ(first.module_generation, 1u);
    EXPECT_EQ(first.frames, (std::vector<uint64_t>{0x401234, 0x401500, 0x7f0000001000}));

    EXPECT_EQ(snapshot.totals.live_bytes, 200u + 600u);
    EXPECT_EQ(snapshot.totals.live_blocks, 2u + 6u);
    EXPECT_EQ(snapshot.totals.allocs, 18u);
    EXPECT_EQ(snapshot.totals.frees, 10u);
    EXPECT_EQ(snapshot.totals.alloc_bytes, 1350u);
    EXPECT_EQ(snapshot.totals.free_bytes, 550u);
}

TEST(ParseSegment, SkipsRecordsThatAreNotReady) {
    auto builder = typical_builder();
    builder.sites[0].state = layout::kAbandoned;
    builder.sites[1].state = layout::kEmpty;
    builder.modules[1].state = layout::kEmpty;
    const auto snapshot = parse_segment(builder.build());
    ASSERT_EQ(snapshot.sites.size(), 1u);
    EXPECT_TRUE(snapshot.sites[0].overflow);
    ASSERT_EQ(snapshot.modules.size(), 1u);
    EXPECT_EQ(snapshot.totals.allocs, 3u);
}

TEST(ParseSegment, ClampsClaimedCountsToCapacities) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) {
        h.sites_claimed = 0xffffffffu;
        h.modules_claimed = 0xffffffffu;
        h.strings_used = 0xffffffffu;
    });
    const auto snapshot = parse_segment(bytes);
    EXPECT_EQ(snapshot.sites.size(), 3u);  // the unwritten slots are kEmpty
    EXPECT_EQ(snapshot.modules.size(), 2u);
    EXPECT_EQ(snapshot.sites_claimed, 0xffffffffu);
}

TEST(ParseSegment, ClampsLiveToZeroWhenFreesExceedAllocations) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 1, .frees = 5, .alloc_bytes = 10, .free_bytes = 99}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.sites[1].live_blocks, 0u);
    EXPECT_EQ(snapshot.sites[1].live_bytes, 0u);
    EXPECT_EQ(snapshot.totals.live_bytes, 0u);
}

TEST(ParseSegment, RejectsCountersWhoseSumOverflows) {
    SegmentBuilder builder;
    const uint64_t huge = std::numeric_limits<uint64_t>::max() - 1;
    builder.sites = {{.allocs = 1, .alloc_bytes = huge}, {.allocs = 1, .alloc_bytes = huge}};
    EXPECT_PRED2(contains, parse_error(builder.build()), "overflows 64 bits");
}

TEST(ParseSegment, RejectsEveryTruncation) {
    const auto bytes = typical_builder().build();
    for (size_t length = 0; length < bytes.size(); ++length) {
        const std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + length);
        EXPECT_NE(parse_error(truncated), "") << "accepted a segment cut to " << length << " bytes";
    }
}

TEST(ParseSegment, RejectsBadMagic) {
    auto bytes = typical_builder().build();
    bytes[0] = std::byte{'X'};
    EXPECT_EQ(parse_error(bytes), "bad magic: not a leakwrap segment");
}

TEST(ParseSegment, RejectsOtherLayoutVersions) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.layout_version = 7; });
    EXPECT_EQ(parse_error(bytes), "segment layout version 7, this reader understands 1");
    patch_header(bytes, [](layout::Header& h) { h.layout_version = 2; });
    EXPECT_EQ(parse_error(bytes), "segment layout version 2, this reader understands 1");
}

TEST(ParseSegment, RejectsAHeaderThatIsNotReady) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.state = layout::kEmpty; });
    EXPECT_PRED2(contains, parse_error(bytes), "not ready");
}

TEST(ParseSegment, RejectsSizesThatDisagreeWithTheBytes) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.header_size = 128; });
    EXPECT_PRED2(contains, parse_error(bytes), "header_size 128");

    bytes = typical_builder().build();
    patch_header(bytes, [&](layout::Header& h) { h.segment_size = bytes.size() + 64; });
    EXPECT_PRED2(contains, parse_error(bytes), "segment_size");

    bytes = typical_builder().build();
    bytes.resize(bytes.size() + 64);  // the file grew behind the header's back
    EXPECT_PRED2(contains, parse_error(bytes), "segment_size");
}

struct HeaderCorruption {
    const char* name;
    void (*corrupt)(layout::Header&);
    const char* expected_message_part;
};

void PrintTo(const HeaderCorruption& corruption, std::ostream* out) { *out << corruption.name; }

class ParseSegmentCorruptHeader : public ::testing::TestWithParam<HeaderCorruption> {};

TEST_P(ParseSegmentCorruptHeader, IsRejectedWithAClearMessage) {
    auto bytes = typical_builder().build();
    patch_header(bytes, GetParam().corrupt);
    EXPECT_PRED2(contains, parse_error(bytes), GetParam().expected_message_part);
}

INSTANTIATE_TEST_SUITE_P(
    EveryGeometryField, ParseSegmentCorruptHeader,
    ::testing::Values(
        HeaderCorruption{"SitesBeyondEnd",
                         [](layout::Header& h) { h.sites_offset = h.segment_size; }, "site table"},
        HeaderCorruption{"SitesOffsetHuge", [](layout::Header& h) { h.sites_offset = ~0ull - 8; },
                         "site table"},
        HeaderCorruption{"SitesOverlapHeader", [](layout::Header& h) { h.sites_offset = 64; },
                         "overlaps the header"},
        HeaderCorruption{"ModulesBeyondEnd",
                         [](layout::Header& h) { h.modules_offset = h.segment_size - 64; },
                         "module table"},
        HeaderCorruption{"ModulesOverlapHeader", [](layout::Header& h) { h.modules_offset = 0; },
                         "overlaps the header"},
        HeaderCorruption{"StringsBeyondEnd",
                         [](layout::Header& h) { h.strings_capacity = 0xffffffffu; },
                         "string pool"},
        HeaderCorruption{"StringsOverlapHeader", [](layout::Header& h) { h.strings_offset = 8; },
                         "overlaps the header"},
        HeaderCorruption{"SitesOverlapModules",
                         [](layout::Header& h) { h.modules_offset = h.sites_offset + 64; },
                         "overlaps"},
        HeaderCorruption{"ModulesOverlapStrings",
                         [](layout::Header& h) { h.strings_offset = h.modules_offset; },
                         "overlaps"},
        HeaderCorruption{"TooManySites", [](layout::Header& h) { h.site_capacity = 100000; },
                         "site table"},
        HeaderCorruption{"SiteCapacityAboveLimit",
                         [](layout::Header& h) { h.site_capacity = layout::kMaxSiteCapacity + 1; },
                         "site_capacity"},
        HeaderCorruption{"NoOverflowSlot", [](layout::Header& h) { h.site_capacity = 0; },
                         "site_capacity 0"},
        HeaderCorruption{"SiteRecordTooSmall", [](layout::Header& h) { h.site_record_size = 64; },
                         "site_record_size 64"},
        HeaderCorruption{"SiteRecordHuge",
                         [](layout::Header& h) { h.site_record_size = 0xffffffffu; }, "site table"},
        HeaderCorruption{"ModuleRecordTooSmall",
                         [](layout::Header& h) { h.module_record_size = 16; },
                         "module_record_size 16"},
        HeaderCorruption{"TooManyModules",
                         [](layout::Header& h) { h.module_capacity = 0xffffffffu; },
                         "module table"},
        HeaderCorruption{"DepthAboveLimit", [](layout::Header& h) { h.max_depth = 65; },
                         "max_depth 65"},
        HeaderCorruption{"DepthAboveRecordSize", [](layout::Header& h) { h.max_depth = 64; },
                         "site_record_size"},
        HeaderCorruption{"ExeOutsidePool",
                         [](layout::Header& h) {
                             h.exe_path = {h.strings_capacity - 2, 3};
                         },
                         "exe path string"},
        HeaderCorruption{"CommandLineWraps",
                         [](layout::Header& h) {
                             h.command_line = {8, 0xfffffffcu};
                         },
                         "command line string"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParseSegment, RejectsASiteDeeperThanMaxDepth) {
    auto bytes = typical_builder().build();
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, 1),
                              [](layout::SiteRecord& site) { site.depth = 9; });
    EXPECT_PRED2(contains, parse_error(bytes), "site 1 has depth 9");
}

TEST(ParseSegment, IgnoresTheDepthOfSlotsThatAreNotReady) {
    auto bytes = typical_builder().build();
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, 5),
                              [](layout::SiteRecord& site) { site.depth = 0xffffffffu; });
    EXPECT_EQ(parse_error(bytes), "");
}

TEST(ParseSegment, RejectsAModulePathOutsideThePool) {
    auto bytes = typical_builder().build();
    patch<layout::ModuleRecord>(bytes, testing::module_offset(bytes, 1),
                                [](layout::ModuleRecord& m) {
                                    m.path = {1020, 5};
                                });
    EXPECT_PRED2(contains, parse_error(bytes), "module 1 path string");
}

TEST(ParseSegment, RejectsAnOversizedBuildId) {
    auto bytes = typical_builder().build();
    patch<layout::ModuleRecord>(bytes, testing::module_offset(bytes, 0),
                                [](layout::ModuleRecord& m) { m.build_id_length = 33; });
    EXPECT_PRED2(contains, parse_error(bytes), "build-id");
}

TEST(ParseSegment, RejectsAModuleThatEndsBeforeItStarts) {
    auto bytes = typical_builder().build();
    patch<layout::ModuleRecord>(bytes, testing::module_offset(bytes, 0),
                                [](layout::ModuleRecord& m) { m.end = m.start - 1; });
    EXPECT_PRED2(contains, parse_error(bytes), "starts after it ends");
}

TEST(ParseSegment, AcceptsAnEmptyStringPoolAnywhere) {
    SegmentBuilder builder;
    builder.exe = "";
    builder.command_line = "";
    auto bytes = builder.build();
    patch_header(bytes, [](layout::Header& h) {
        h.strings_capacity = 0;
        h.strings_offset = ~0ull;
    });
    EXPECT_EQ(parse_segment(bytes).exe, "");
}

// libFuzzer will do this properly; here a cheap, deterministic sweep guards against crashes
// and hangs on garbage and on valid segments with a few bytes flipped.
TEST(ParseSegment, SurvivesGarbageAndBitFlips) {
    std::mt19937_64 random(20240601);
    const auto valid = typical_builder().build();
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::byte> bytes;
        if (round % 3 == 0) {
            bytes.resize(random() % 4096);
            for (auto& b : bytes) b = std::byte(random());
            if (bytes.size() >= 12 && round % 2 == 0) {
                std::memcpy(bytes.data(), layout::kMagic, sizeof(layout::kMagic));
                const uint32_t version = layout::kLayoutVersion;
                std::memcpy(bytes.data() + 8, &version, sizeof(version));
            }
        } else {
            bytes = valid;
            for (int flips = 1 + random() % 4; flips > 0; --flips)
                bytes[random() % bytes.size()] ^= std::byte(1u << (random() % 8));
        }
        try {
            parse_segment(bytes);
        } catch (const SegmentError&) {
        }
    }
}

}  // namespace
}  // namespace leakwrap
