// The parser and the segment's header: which layouts it reads, how it rejects a header whose
// geometry does not hold, and that no garbage makes it crash or hang.
#include "sample_segments.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace leakwrap {
namespace {

using namespace testing;

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
    constexpr auto kAdvice = ": read it with the leakwrap-report of the libleakwrap.so that wrote it";
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.layout_version = layout::kLayoutVersion + 1; });
    EXPECT_EQ(parse_error(bytes), "segment layout version " + std::to_string(layout::kLayoutVersion + 1) +
                                      ", this reader understands " + std::to_string(layout::kLayoutVersion) + kAdvice);
}

// Older writers' segments: a v1 header is 64 bytes shorter and lays the fields out differently,
// a v2 one keeps no site deltas, a v3 one keeps the stacks inside the sites, a v4 one its bins
// class-major, so nothing after the version may be read.
TEST(ParseSegment, RejectsOlderLayoutVersionSegments) {
    for (const uint32_t version : {1u, 2u, 3u, 4u}) {
        std::vector<std::byte> bytes(4096);
        std::memcpy(bytes.data(), layout::kMagic, sizeof(layout::kMagic));
        std::memcpy(bytes.data() + offsetof(layout::Header, layout_version), &version, sizeof(version));
        EXPECT_PRED2(contains, parse_error(bytes),
                     "segment layout version " + std::to_string(version) +
                         " was written by an older libleakwrap.so (this reader reads versions 5 to " +
                         std::to_string(layout::kLayoutVersion) +
                         ", whose size-class bins are kept shard-major): read it with the "
                         "leakwrap-report of the libleakwrap.so that wrote it");
    }
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
    ::testing::
        Values(
            HeaderCorruption{"SitesBeyondEnd", [](layout::Header& h) { h.sites_offset = h.segment_size; },
                             "site table"},
            HeaderCorruption{"SitesOffsetHuge", [](layout::Header& h) { h.sites_offset = ~0ull - 8; }, "site table"},
            HeaderCorruption{"SitesOverlapHeader", [](layout::Header& h) { h.sites_offset = 64; },
                             "overlaps the header"},
            HeaderCorruption{"ModulesBeyondEnd", [](layout::Header& h) { h.modules_offset = h.segment_size - 64; },
                             "module table"},
            HeaderCorruption{"ModulesOverlapHeader", [](layout::Header& h) { h.modules_offset = 0; },
                             "overlaps the header"},
            HeaderCorruption{"StringsBeyondEnd", [](layout::Header& h) { h.strings_capacity = 0xffffffffu; },
                             "string pool"},
            HeaderCorruption{"StringsOverlapHeader", [](layout::Header& h) { h.strings_offset = 8; },
                             "overlaps the header"},
            HeaderCorruption{"SitesOverlapModules", [](layout::Header& h) { h.modules_offset = h.sites_offset + 64; },
                             "overlaps"},
            HeaderCorruption{"ModulesOverlapStrings", [](layout::Header& h) { h.strings_offset = h.modules_offset; },
                             "overlaps"},
            HeaderCorruption{"TooManySites", [](layout::Header& h) { h.site_capacity = 100000; }, "site table"},
            HeaderCorruption{"SiteCapacityAboveLimit",
                             [](layout::Header& h) { h.site_capacity = layout::kMaxSiteCapacity + 1; },
                             "site_capacity"},
            HeaderCorruption{"NoSiteTable", [](layout::Header& h) { h.site_capacity = 0; }, "site_capacity 0"},
            HeaderCorruption{"OnlyOverflowSites", [](layout::Header& h) { h.site_capacity = layout::kOverflowSites; },
                             "site_capacity 88 is outside [89, "},
            HeaderCorruption{"SiteRecordTooSmall", [](layout::Header& h) { h.site_record_size = 32; },
                             "site_record_size 32"},
            HeaderCorruption{"SiteRecordHuge", [](layout::Header& h) { h.site_record_size = 0xffffffffu; },
                             "site_record_size 4294967295 is outside [40, 4096]"},
            HeaderCorruption{"SiteRecordAboveLimit", [](layout::Header& h) { h.site_record_size = 4097; },
                             "site_record_size 4097 is outside [40, 4096]"},
            HeaderCorruption{"ModuleRecordTooSmall", [](layout::Header& h) { h.module_record_size = 16; },
                             "module_record_size 16"},
            HeaderCorruption{"TooManyModules", [](layout::Header& h) { h.module_capacity = 0xffffffffu; },
                             "module table"},
            HeaderCorruption{"DepthAboveLimit", [](layout::Header& h) { h.max_depth = 65; }, "max_depth 65"},
            HeaderCorruption{"RubyDepthAboveLimit", [](layout::Header& h) { h.max_ruby_depth = 65; },
                             "max_ruby_depth 65"},
            HeaderCorruption{"StackTableAboveLimit",
                             [](layout::Header& h) { h.stacks_capacity = layout::kMaxStackTableBytes + 1; },
                             "stacks_capacity"},
            HeaderCorruption{"StackTableOutsideSegment", [](layout::Header& h) { h.stacks_capacity = h.segment_size; },
                             "stack table"},
            HeaderCorruption{"ExeOutsidePool", [](layout::Header& h) { h.exe_path = {h.strings_capacity - 2, 3}; },
                             "exe path string"},
            HeaderCorruption{"NoBinShards", [](layout::Header& h) { h.bin_shards = 0; },
                             "bin_shards 0 is outside [1, 256]"},
            HeaderCorruption{"TooManyBinShards", [](layout::Header& h) { h.bin_shards = 257; }, "bin_shards 257"},
            HeaderCorruption{"BinsBeyondEnd", [](layout::Header& h) { h.bins_offset = h.segment_size - 64; },
                             "bin table"},
            HeaderCorruption{"BinsOffsetHuge", [](layout::Header& h) { h.bins_offset = ~0ull - 8; }, "bin table"},
            HeaderCorruption{"BinsOverlapHeader", [](layout::Header& h) { h.bins_offset = 0; },
                             "bin table at offset 0 overlaps the header"},
            HeaderCorruption{"BinsOverlapSites", [](layout::Header& h) { h.bins_offset = h.sites_offset + 128; },
                             "site table overlaps bin table"},
            HeaderCorruption{"BinsOverlapModules", [](layout::Header& h) { h.bins_offset = h.modules_offset; },
                             "module table overlaps bin table"},
            HeaderCorruption{"BinsOverlapStrings", [](layout::Header& h) { h.strings_offset -= 64; },
                             "string pool overlaps bin table"},
            HeaderCorruption{
                "CommandLineWraps",
                [](layout::Header& h) {
                    h.command_line = {8, 0xfffffffcu};
                },
                "command line string"},
            // The typical segment has 3 bin shards of 4 site delta slots, after the string pool.
            HeaderCorruption{"DeltaSlotsNotAPowerOfTwo", [](layout::Header& h) { h.site_delta_slots = 3; },
                             "site_delta_slots 3 is not a power of two (nor 0)"},
            HeaderCorruption{"DeltaSlotsAboveLimit", [](layout::Header& h) { h.site_delta_slots = 8192; },
                             "site_delta_slots 8192 exceeds the limit of 4096"},
            HeaderCorruption{"DeltaSlotsHuge", [](layout::Header& h) { h.site_delta_slots = 0x80000000u; },
                             "site_delta_slots 2147483648 exceeds the limit of 4096"},
            HeaderCorruption{"DeltaTableGrowsPastTheEnd", [](layout::Header& h) { h.site_delta_slots = 4096; },
                             "site delta table ["},
            HeaderCorruption{"DeltasBeyondEnd", [](layout::Header& h) { h.site_deltas_offset = h.segment_size - 64; },
                             "site delta table ["},
            HeaderCorruption{"DeltasOffsetHuge", [](layout::Header& h) { h.site_deltas_offset = ~0ull - 8; },
                             "site delta table ["},
            HeaderCorruption{"DeltasOverlapHeader", [](layout::Header& h) { h.site_deltas_offset = 64; },
                             "site delta table at offset 64 overlaps the header"},
            HeaderCorruption{"DeltasOverlapSites",
                             [](layout::Header& h) { h.site_deltas_offset = h.sites_offset + 40; },
                             "site table overlaps site delta table"},
            HeaderCorruption{"DeltasOverlapModules", [](layout::Header& h) { h.site_deltas_offset = h.modules_offset; },
                             "module table overlaps site delta table"},
            HeaderCorruption{"DeltasOverlapStrings",
                             [](layout::Header& h) { h.site_deltas_offset = h.strings_offset + 8; },
                             "string pool overlaps site delta table"},
            HeaderCorruption{"DeltasOverlapBins", [](layout::Header& h) { h.site_deltas_offset = h.bins_offset + 40; },
                             "bin table overlaps site delta table"},
            HeaderCorruption{"DeltasGrowIntoTheStrings",
                             [](layout::Header& h) { h.site_deltas_offset = h.strings_offset - 64; },
                             "string pool overlaps site delta table"}),
    [](const auto& test) { return std::string(test.param.name); });

// Layout 7's header counts the writer's private tables in the word layout 6 kept reserved (0).
TEST(ParseSegment, ReadsTheWritersPrivateTablesFromLayout7On) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.private_kib = 1536; });
    EXPECT_EQ(parse_segment(bytes).writer_private_bytes, std::optional<uint64_t>(1536 * 1024));
    patch_header(bytes, [](layout::Header& h) {
        h.layout_version = 6;
        h.header_size = layout::kHeaderSizeBeforeBirthGrid;
        h.private_kib = 0;
    });
    EXPECT_EQ(parse_segment(bytes).writer_private_bytes, std::nullopt);
}

TEST(ParseSegment, SaysWhyAnOlderLayoutIsNotRead) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.layout_version = layout::kOldestReadableVersion - 1; });
    EXPECT_PRED2(contains, parse_error(bytes), "was written by an older libleakwrap.so");
}

// libFuzzer will do this properly; here a cheap, deterministic sweep guards against crashes
// and hangs on garbage and on valid segments with a few bytes flipped.
TEST(ParseSegment, SurvivesGarbageAndBitFlips) {
    std::mt19937_64 random(20240601);
    auto previous_layout = ruby_builder();
    previous_layout.layout_version = 5;
    const std::vector<std::byte> valid[] = {typical_builder().build(), ruby_builder().build(), previous_layout.build()};
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
            bytes = valid[round % std::size(valid)];
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
