#include "segment_snapshot.h"
#include "report_rows.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>

namespace leakwrap {
namespace {

using testing::BuiltModule;
using testing::BuiltSite;
using testing::patch;
using testing::patch_header;
using testing::SegmentBuilder;

constexpr uint32_t kFirst = testing::kFirstSiteSlot;

// Size classes of the blocks below: 100-byte blocks are in class 7 (97..112), 10-byte ones in 1.
constexpr uint32_t kClassOf100 = layout::size_class_of(100);
constexpr uint32_t kClassOf10 = layout::size_class_of(10);

SegmentBuilder typical_builder() {
    SegmentBuilder builder;
    builder.overflow_sites[kClassOf100] = {
        .allocs = 3, .frees = 1, .alloc_bytes = 300, .free_bytes = 100};
    builder.sites = {
        {.allocs = 10,
         .frees = 4,
         .alloc_bytes = 1000,
         .free_bytes = 400,
         .frames = {0x401234, 0x401500, 0x7f0000001000},
         .module_generation = 1,
         .ruby_file = "app/models/user.rb",
         .ruby_line = 42},
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

// Every layout this reader reads: the current one and layout 5, whose Ruby frames were inline.
constexpr uint32_t kReadableLayouts[] = {5, 6, 7, layout::kLayoutVersion};

// Backtraces of one Rails process: the sites share their outer Ruby frames, and the last site's
// whole backtrace is the first's. In layout 6 its stack table holds, at these offsets:
//     0 puma/server.rb:444 (depth 1)   16 users_controller.rb:7 (2)   32 user.rb:42 (3)
//    48 site 88's stack                72 post.rb:9 (3, calls 16)     88 site 89's stack
//   120 jobs.rb:3 (2, calls 0)        136 site 90's stack            160 site 91's (no Ruby)
//   184 site 92's stack (calls 32)    208..272 the builder's slack
SegmentBuilder ruby_builder() {
    const std::vector<testing::BuiltRubyFrame> request{
        {"app/controllers/users_controller.rb", 7}, {"puma/server.rb", 444}};
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 3, .alloc_bytes = 300, .frames = {0x401234},
         .ruby_file = "app/models/user.rb", .ruby_line = 42, .outer_ruby = request},
        {.allocs = 2, .alloc_bytes = 64, .frames = {0x401300, 0x401400}, .module_generation = 1,
         .ruby_file = "app/models/post.rb", .ruby_line = 9, .outer_ruby = request, .reduced = true},
        {.allocs = 1, .frees = 1, .alloc_bytes = 10, .free_bytes = 10, .frames = {0x401500},
         .ruby_file = "lib/jobs.rb", .ruby_line = 3, .outer_ruby = {{"puma/server.rb", 444}}},
        {.allocs = 5, .alloc_bytes = 50, .frames = {0x401600}},
        {.allocs = 4, .alloc_bytes = 4000, .frames = {0x401700},
         .ruby_file = "app/models/user.rb", .ruby_line = 42, .outer_ruby = request},
    };
    return builder;
}

// The innermost Ruby frame of the stack of site kFirst, which has one.
void corrupt_ruby_file(std::vector<std::byte>& bytes, uint32_t file) {
    patch<layout::RubyFrame>(bytes, testing::ruby_frame_offset(bytes, kFirst, 0),
                             [file](layout::RubyFrame& frame) { frame.file = file; });
}

const Site& site_in_slot(const Snapshot& snapshot, uint32_t slot) {
    for (const Site& site : snapshot.sites)
        if (site.id == slot) return site;
    throw std::out_of_range("no ready site in slot " + std::to_string(slot));
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
    auto builder = typical_builder();
    builder.sample_interval = 0;
    const auto snapshot = parse_segment(builder.build());

    EXPECT_EQ(snapshot.pid, testing::kAbsentPid);
    EXPECT_EQ(snapshot.parent_pid, 1);
    EXPECT_EQ(snapshot.start_time_ticks, 12345u);
    EXPECT_EQ(snapshot.created_unix_ns, 1700000000000000000ull);
    EXPECT_EQ(snapshot.boot_id, "00000000-1111-2222-3333-444444444444");
    EXPECT_EQ(snapshot.exe, "/usr/bin/leaky");
    EXPECT_EQ(snapshot.command_line, "leaky --fast");
    EXPECT_EQ(snapshot.max_depth, 8u);
    EXPECT_EQ(snapshot.site_capacity, layout::kMinSiteCapacity + 11);
    EXPECT_EQ(snapshot.sites_claimed, kFirst + 2);
    EXPECT_EQ(snapshot.sample_interval, 0u);
    EXPECT_FALSE(snapshot.sampled());

    ASSERT_EQ(snapshot.modules.size(), 2u);
    EXPECT_EQ(snapshot.modules[0].path, "/usr/bin/leaky");
    EXPECT_EQ(snapshot.modules[0].build_id, (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
    EXPECT_EQ(snapshot.modules[0].unload_generation, layout::kStillLoaded);
    EXPECT_EQ(snapshot.modules[1].load_bias, 0x7f0000000000u);
    EXPECT_EQ(snapshot.modules[1].end, 0x7f0000100000u);
    EXPECT_EQ(snapshot.modules[1].load_generation, 1u);
    EXPECT_EQ(snapshot.modules[1].unload_generation, 3u);

    // Every overflow site is ready from the start, one per size class.
    ASSERT_EQ(snapshot.sites.size(), layout::kOverflowSites + 2);
    for (uint32_t slot = 0; slot < layout::kOverflowSites; ++slot) {
        const Site& overflow = snapshot.sites[slot];
        EXPECT_TRUE(overflow.overflow());
        EXPECT_EQ(overflow.id, slot);
        EXPECT_EQ(overflow.size_class(), slot);
        EXPECT_TRUE(overflow.frames().empty());
        EXPECT_TRUE(overflow.ruby().empty());
    }
    EXPECT_EQ(snapshot.sites[kClassOf100].counters().live_blocks(), 2u);

    const Site& first = site_in_slot(snapshot, kFirst);
    EXPECT_FALSE(first.overflow());
    EXPECT_EQ(first.size_class(), kClassOf100);
    EXPECT_EQ(first.counters().live_blocks(), 6u);
    EXPECT_EQ(first.counters().live_bytes(), 600u);
    EXPECT_EQ(first.module_generation(), 1u);
    EXPECT_EQ(std::vector<uint64_t>(first.frames().begin(), first.frames().end()),
              (std::vector<uint64_t>{0x401234, 0x401500, 0x7f0000001000}));
    ASSERT_EQ(first.ruby().size(), 1u);
    EXPECT_EQ(first.ruby()[0].file, "app/models/user.rb");
    EXPECT_EQ(first.ruby()[0].line, 42u);
    const Site& second = site_in_slot(snapshot, kFirst + 1);
    EXPECT_EQ(second.size_class(), kClassOf10);
    EXPECT_TRUE(second.ruby().empty());

    ASSERT_EQ(snapshot.bins.size(), layout::kSizeClassCount);
    EXPECT_EQ(snapshot.bins[kClassOf100].allocs, 13u);
    EXPECT_EQ(snapshot.bins[kClassOf100].free_bytes, 500u);
    EXPECT_EQ(snapshot.bins[kClassOf10].allocs, 5u);
    EXPECT_EQ(snapshot.totals.live_bytes(), 200u + 600u);
    EXPECT_EQ(snapshot.totals.live_blocks(), 2u + 6u);
    EXPECT_EQ(snapshot.totals.allocs, 18u);
    EXPECT_EQ(snapshot.totals.frees, 10u);
    EXPECT_EQ(snapshot.totals.alloc_bytes, 1350u);
    EXPECT_EQ(snapshot.totals.free_bytes, 550u);
    // The ordinary sites, and the one overflow site that counted something.
    EXPECT_EQ(snapshot.sites_in_use(), 3u);
}

TEST(ParseSegment, SumsEachSizeClassOverItsShards) {
    SegmentBuilder builder;
    builder.bin_shards = 4;
    builder.bins = std::vector<testing::BuiltBin>{
        {.size_class = 5, .shard = 0, .allocs = 1, .alloc_bytes = 80},
        {.size_class = 5,
         .shard = 3,
         .allocs = 2,
         .frees = 1,
         .alloc_bytes = 160,
         .free_bytes = 80},
        {.size_class = 87, .shard = 2, .allocs = 1, .alloc_bytes = uint64_t{1} << 41},
    };
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.bins[5].allocs, 3u);
    EXPECT_EQ(snapshot.bins[5].frees, 1u);
    EXPECT_EQ(snapshot.bins[5].live_bytes(), 160u);
    EXPECT_EQ(snapshot.bins[87].alloc_bytes, uint64_t{1} << 41);
    EXPECT_EQ(snapshot.totals.allocs, 4u);
    EXPECT_EQ(snapshot.totals.live_bytes(), 160u + (uint64_t{1} << 41));
}

// In sampling mode the sites count only sampled blocks; the bins count them all.
TEST(ParseSegment, TakesTheTotalsFromTheBinsNotTheSites) {
    SegmentBuilder builder;
    builder.sample_interval = 512 * 1024;
    builder.sites = {{.allocs = 1, .alloc_bytes = 1000}};
    builder.bins = std::vector<testing::BuiltBin>{
        {.size_class = layout::size_class_of(1000), .allocs = 700, .alloc_bytes = 700000}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_TRUE(snapshot.sampled());
    EXPECT_EQ(snapshot.sample_interval, 512u * 1024);
    EXPECT_EQ(snapshot.totals.allocs, 700u);
    EXPECT_EQ(snapshot.totals.live_bytes(), 700000u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().allocs, 1u);
}

TEST(ParseSegment, SkipsRecordsThatAreNotReady) {
    auto builder = typical_builder();
    builder.sites[0].state = layout::kAbandoned;
    builder.sites[1].state = layout::kEmpty;
    builder.modules[1].state = layout::kEmpty;
    const auto snapshot = parse_segment(builder.build());
    ASSERT_EQ(snapshot.sites.size(), layout::kOverflowSites);
    ASSERT_EQ(snapshot.modules.size(), 1u);
    EXPECT_EQ(snapshot.sites_in_use(), 1u);
}

TEST(ParseSegment, ClampsClaimedCountsToCapacities) {
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) {
        h.sites_claimed = 0xffffffffu;
        h.modules_claimed = 0xffffffffu;
        h.strings_used = 0xffffffffu;
    });
    const auto snapshot = parse_segment(bytes);
    EXPECT_EQ(snapshot.sites.size(), kFirst + 2);  // the unwritten slots are kEmpty
    EXPECT_EQ(snapshot.modules.size(), 2u);
    EXPECT_EQ(snapshot.sites_claimed, 0xffffffffu);
}

TEST(ParseSegment, ClampsLiveToZeroWhenFreesExceedAllocations) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 1, .frees = 5, .alloc_bytes = 10, .free_bytes = 99}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().live_blocks(), 0u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().live_bytes(), 0u);
    EXPECT_EQ(snapshot.totals.live_bytes(), 0u);
}

// Kept, since a copy of a live segment can show them, but flagged in one line naming the first.
TEST(ParseSegment, FlagsSitesWithMoreFreesOrFreedBytesThanAllocated) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 2, .frees = 1, .alloc_bytes = 20, .free_bytes = 10, .frames = {0x1001}},
                     {.allocs = 1, .frees = 5, .alloc_bytes = 10, .free_bytes = 50, .frames = {0x1002}},
                     {.allocs = 3, .frees = 3, .alloc_bytes = 30, .free_bytes = 31, .frames = {0x1003}}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.sites_in_use(), 3u);
    EXPECT_EQ(snapshot.impossible_sites, 2u);
    EXPECT_EQ(snapshot.first_impossible_site, kFirst + 1);
    const auto warning = impossible_counts_warning(snapshot);
    ASSERT_TRUE(warning);
    EXPECT_EQ(warning->find('\n'), std::string::npos);
    EXPECT_PRED2(contains, *warning,
                 "site " + std::to_string(kFirst + 1) +
                     " counts more frees than allocations (1 allocs, 5 frees, 10 B allocated, 50 B "
                     "freed), and 1 more site(s) do");
}

// Counts in a delta entry make a record that alone looks impossible whole again.
TEST(ParseSegment, FlagsNothingWhenTheDeltasMakeTheCountsAddUp) {
    SegmentBuilder builder;
    builder.sites = {{.frees = 2, .free_bytes = 20, .frames = {0x1001}}};
    builder.deltas = {{.shard = 1, .site = kFirst, .allocs = 3, .alloc_bytes = 30}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.impossible_sites, 0u);
    EXPECT_FALSE(impossible_counts_warning(snapshot));
    EXPECT_FALSE(impossible_counts_warning(parse_segment(typical_builder().build())));
}

TEST(ParseSegment, RejectsBinsWhoseSumOverflows) {
    const uint64_t huge = std::numeric_limits<uint64_t>::max() - 1;
    SegmentBuilder across_shards;
    across_shards.bins =
        std::vector<testing::BuiltBin>{{.size_class = 3, .shard = 0, .alloc_bytes = huge},
                                       {.size_class = 3, .shard = 1, .alloc_bytes = huge}};
    EXPECT_PRED2(contains, parse_error(across_shards.build()), "overflows 64 bits");

    SegmentBuilder across_classes;
    across_classes.bins = std::vector<testing::BuiltBin>{{.size_class = 3, .allocs = huge},
                                                         {.size_class = 4, .allocs = huge}};
    EXPECT_PRED2(contains, parse_error(across_classes.build()), "overflows 64 bits");
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
    constexpr auto kAdvice =
        ": read it with the leakwrap-report of the libleakwrap.so that wrote it";
    auto bytes = typical_builder().build();
    patch_header(bytes, [](layout::Header& h) { h.layout_version = layout::kLayoutVersion + 1; });
    EXPECT_EQ(parse_error(bytes), "segment layout version " + std::to_string(layout::kLayoutVersion + 1) +
                                      ", this reader understands " + std::to_string(layout::kLayoutVersion) +
                                      kAdvice);
}

// Older writers' segments: a v1 header is 64 bytes shorter and lays the fields out differently,
// a v2 one keeps no site deltas, a v3 one keeps the stacks inside the sites, a v4 one its bins
// class-major, so nothing after the version may be read.
TEST(ParseSegment, RejectsOlderLayoutVersionSegments) {
    for (const uint32_t version : {1u, 2u, 3u, 4u}) {
        std::vector<std::byte> bytes(4096);
        std::memcpy(bytes.data(), layout::kMagic, sizeof(layout::kMagic));
        std::memcpy(bytes.data() + offsetof(layout::Header, layout_version), &version,
                    sizeof(version));
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
        HeaderCorruption{"NoSiteTable", [](layout::Header& h) { h.site_capacity = 0; },
                         "site_capacity 0"},
        HeaderCorruption{"OnlyOverflowSites",
                         [](layout::Header& h) { h.site_capacity = layout::kOverflowSites; },
                         "site_capacity 88 is outside [89, "},
        HeaderCorruption{"SiteRecordTooSmall", [](layout::Header& h) { h.site_record_size = 32; },
                         "site_record_size 32"},
        HeaderCorruption{"SiteRecordHuge",
                         [](layout::Header& h) { h.site_record_size = 0xffffffffu; },
                         "site_record_size 4294967295 is outside [40, 4096]"},
        HeaderCorruption{"SiteRecordAboveLimit", [](layout::Header& h) { h.site_record_size = 4097; },
                         "site_record_size 4097 is outside [40, 4096]"},
        HeaderCorruption{"ModuleRecordTooSmall",
                         [](layout::Header& h) { h.module_record_size = 16; },
                         "module_record_size 16"},
        HeaderCorruption{"TooManyModules",
                         [](layout::Header& h) { h.module_capacity = 0xffffffffu; },
                         "module table"},
        HeaderCorruption{"DepthAboveLimit", [](layout::Header& h) { h.max_depth = 65; },
                         "max_depth 65"},
        HeaderCorruption{"RubyDepthAboveLimit", [](layout::Header& h) { h.max_ruby_depth = 65; },
                         "max_ruby_depth 65"},
        HeaderCorruption{"StackTableAboveLimit",
                         [](layout::Header& h) { h.stacks_capacity = layout::kMaxStackTableBytes + 1; },
                         "stacks_capacity"},
        HeaderCorruption{"StackTableOutsideSegment",
                         [](layout::Header& h) { h.stacks_capacity = h.segment_size; },
                         "stack table"},
        HeaderCorruption{"ExeOutsidePool",
                         [](layout::Header& h) {
                             h.exe_path = {h.strings_capacity - 2, 3};
                         },
                         "exe path string"},
        HeaderCorruption{"NoBinShards", [](layout::Header& h) { h.bin_shards = 0; },
                         "bin_shards 0 is outside [1, 256]"},
        HeaderCorruption{"TooManyBinShards", [](layout::Header& h) { h.bin_shards = 257; },
                         "bin_shards 257"},
        HeaderCorruption{"BinsBeyondEnd",
                         [](layout::Header& h) { h.bins_offset = h.segment_size - 64; },
                         "bin table"},
        HeaderCorruption{"BinsOffsetHuge", [](layout::Header& h) { h.bins_offset = ~0ull - 8; },
                         "bin table"},
        HeaderCorruption{"BinsOverlapHeader", [](layout::Header& h) { h.bins_offset = 0; },
                         "bin table at offset 0 overlaps the header"},
        HeaderCorruption{"BinsOverlapSites",
                         [](layout::Header& h) { h.bins_offset = h.sites_offset + 128; },
                         "site table overlaps bin table"},
        HeaderCorruption{"BinsOverlapModules",
                         [](layout::Header& h) { h.bins_offset = h.modules_offset; },
                         "module table overlaps bin table"},
        HeaderCorruption{"BinsOverlapStrings", [](layout::Header& h) { h.strings_offset -= 64; },
                         "string pool overlaps bin table"},
        HeaderCorruption{"CommandLineWraps",
                         [](layout::Header& h) { h.command_line = {8, 0xfffffffcu}; },
                         "command line string"},
        // The typical segment has 3 bin shards of 4 site delta slots, after the string pool.
        HeaderCorruption{"DeltaSlotsNotAPowerOfTwo",
                         [](layout::Header& h) { h.site_delta_slots = 3; },
                         "site_delta_slots 3 is not a power of two (nor 0)"},
        HeaderCorruption{"DeltaSlotsAboveLimit",
                         [](layout::Header& h) { h.site_delta_slots = 8192; },
                         "site_delta_slots 8192 exceeds the limit of 4096"},
        HeaderCorruption{"DeltaSlotsHuge",
                         [](layout::Header& h) { h.site_delta_slots = 0x80000000u; },
                         "site_delta_slots 2147483648 exceeds the limit of 4096"},
        HeaderCorruption{"DeltaTableGrowsPastTheEnd",
                         [](layout::Header& h) { h.site_delta_slots = 4096; },
                         "site delta table ["},
        HeaderCorruption{"DeltasBeyondEnd",
                         [](layout::Header& h) { h.site_deltas_offset = h.segment_size - 64; },
                         "site delta table ["},
        HeaderCorruption{"DeltasOffsetHuge",
                         [](layout::Header& h) { h.site_deltas_offset = ~0ull - 8; },
                         "site delta table ["},
        HeaderCorruption{"DeltasOverlapHeader",
                         [](layout::Header& h) { h.site_deltas_offset = 64; },
                         "site delta table at offset 64 overlaps the header"},
        HeaderCorruption{"DeltasOverlapSites",
                         [](layout::Header& h) { h.site_deltas_offset = h.sites_offset + 40; },
                         "site table overlaps site delta table"},
        HeaderCorruption{"DeltasOverlapModules",
                         [](layout::Header& h) { h.site_deltas_offset = h.modules_offset; },
                         "module table overlaps site delta table"},
        HeaderCorruption{"DeltasOverlapStrings",
                         [](layout::Header& h) { h.site_deltas_offset = h.strings_offset + 8; },
                         "string pool overlaps site delta table"},
        HeaderCorruption{"DeltasOverlapBins",
                         [](layout::Header& h) { h.site_deltas_offset = h.bins_offset + 40; },
                         "bin table overlaps site delta table"},
        HeaderCorruption{"DeltasGrowIntoTheStrings",
                         [](layout::Header& h) {
                             h.site_deltas_offset = h.strings_offset - 64;
                         },
                         "string pool overlaps site delta table"}),
    [](const auto& test) { return std::string(test.param.name); });

// A writer thread counts in its own shard's delta entries and moves them into the record now
// and then: a site's counts are its record's plus every entry naming it, in any shard.
TEST(ParseSegment, AddsEverySiteDeltaToTheSiteItNames) {
    auto builder = typical_builder();
    builder.deltas = {
        {.shard = 0, .site = kFirst, .allocs = 2, .alloc_bytes = 200},
        {.shard = 2,
         .site = kFirst,
         .allocs = 1,
         .frees = 3,
         .alloc_bytes = 100,
         .free_bytes = 300},
        // The reader goes by the site an entry names, not by where the entry lies.
        {.shard = 1, .site = kFirst, .allocs = 4, .alloc_bytes = 400, .slot = 1},
        {.shard = 1, .site = kClassOf100, .allocs = 1, .alloc_bytes = 100},
    };
    const auto snapshot = parse_segment(builder.build());

    const Counters first = site_in_slot(snapshot, kFirst).counters();
    EXPECT_EQ(first.allocs, 10u + 2 + 1 + 4);
    EXPECT_EQ(first.frees, 4u + 3);
    EXPECT_EQ(first.alloc_bytes, 1000u + 200 + 100 + 400);
    EXPECT_EQ(first.free_bytes, 400u + 300);
    EXPECT_EQ(first.live_blocks(), 10u);
    EXPECT_EQ(first.live_bytes(), 1000u);
    const Counters overflow = site_in_slot(snapshot, kClassOf100).counters();
    EXPECT_EQ(overflow.allocs, 3u + 1);
    EXPECT_EQ(overflow.live_bytes(), 300u);
    const Counters second = site_in_slot(snapshot, kFirst + 1).counters();
    EXPECT_EQ(second.allocs, 5u);
    EXPECT_EQ(second.frees, 5u);
    // The builder counted the deltas in the bins too, as the writer does.
    EXPECT_EQ(snapshot.bins[kClassOf100].allocs, 13u + 8);
    EXPECT_EQ(snapshot.totals.live_bytes(), 300u + 1000u);
}

TEST(ParseSegment, IgnoresEmptyDeltaEntries) {
    auto builder = typical_builder();
    // What an entry holds while its owner moves it into the record: nothing, whatever it says.
    builder.deltas = {{.shard = 1,
                       .site = layout::kNoDeltaSite,
                       .allocs = UINT64_MAX,
                       .frees = 7,
                       .alloc_bytes = UINT64_MAX,
                       .slot = 0}};
    const auto snapshot = parse_segment(builder.build());
    const auto expected = parse_segment(typical_builder().build());
    ASSERT_EQ(snapshot.sites.size(), expected.sites.size());
    for (std::size_t i = 0; i < snapshot.sites.size(); ++i) {
        EXPECT_EQ(snapshot.sites[i].counters().allocs, expected.sites[i].counters().allocs) << i;
        EXPECT_EQ(snapshot.sites[i].counters().frees, expected.sites[i].counters().frees) << i;
    }
}

// A live writer may claim a site and count in a delta entry for it after the reader copied
// sites_claimed, or count before the record is published: the entry is ignored like the slot.
TEST(ParseSegment, IgnoresDeltasNamingSlotsWithoutAReadySite) {
    auto builder = typical_builder();
    builder.sites.push_back({.allocs = 1, .alloc_bytes = 8, .state = layout::kAbandoned});
    builder.sites.push_back({.state = layout::kEmpty});
    const uint32_t abandoned = kFirst + 2, unpublished = kFirst + 3;
    const uint32_t unclaimed = kFirst + 6;  // within the capacity, beyond sites_claimed
    builder.deltas = {
        {.shard = 0, .site = abandoned, .allocs = UINT64_MAX, .alloc_bytes = UINT64_MAX},
        {.shard = 0, .site = unpublished, .allocs = UINT64_MAX, .frees = 1},
        {.shard = 1, .site = unclaimed, .allocs = UINT64_MAX, .alloc_bytes = 5},
        {.shard = 2, .site = builder.site_capacity + 1000, .frees = UINT64_MAX, .slot = 0},
        {.shard = 2, .site = layout::kNoDeltaSite - 1, .allocs = 9, .slot = 1},
        {.shard = 2, .site = kFirst + 1, .allocs = 1, .frees = 1, .alloc_bytes = 10,
         .free_bytes = 10, .slot = 2},
    };
    builder.bins = std::vector<testing::BuiltBin>{};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(snapshot.sites.size(), kFirst + 2);
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().allocs, 10u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst + 1).counters().allocs, 6u);
    EXPECT_EQ(site_in_slot(snapshot, kFirst + 1).counters().frees, 6u);
}

TEST(ParseSegment, RejectsASiteDeltaThatOverflowsItsSite) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = UINT64_MAX - 1, .alloc_bytes = 8}};
    builder.deltas = {{.shard = 1, .site = kFirst, .frees = 1},
                      {.shard = 2, .site = kFirst, .allocs = 2}};
    builder.bins = std::vector<testing::BuiltBin>{};
    // kFirst & 3 is 0: the second delta lies in entry 2 * 4 + 0 of the table.
    EXPECT_EQ(parse_error(builder.build()),
              "site 88 allocations overflow 64 bits with delta entry 8 added");
}

// Frees in one thread's delta of blocks whose allocations are in the record (or in another
// thread's delta): only the sum of all of them is the site's count.
TEST(ParseSegment, CountsLiveBlocksAcrossTheRecordAndItsDeltas) {
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = 5, .alloc_bytes = 500, .frames = {0x1001}, .size_class = kClassOf100},
        {.frees = 3, .free_bytes = 30, .frames = {0x1002}, .size_class = kClassOf10},
        // Its allocations were on their way from a delta into the record when the copy was made.
        {.frees = 2, .free_bytes = 200, .frames = {0x1003}, .size_class = kClassOf100},
    };
    builder.deltas = {{.shard = 1, .site = kFirst, .frees = 3, .free_bytes = 300},
                      {.shard = 0, .site = kFirst + 1, .allocs = 4, .alloc_bytes = 40},
                      {.shard = 2, .site = kFirst + 2, .frees = 1, .free_bytes = 100}};
    const auto snapshot = parse_segment(builder.build());

    const Counters record_allocs = site_in_slot(snapshot, kFirst).counters();
    EXPECT_EQ(record_allocs.live_blocks(), 2u);
    EXPECT_EQ(record_allocs.live_bytes(), 200u);
    const Counters delta_allocs = site_in_slot(snapshot, kFirst + 1).counters();
    EXPECT_EQ(delta_allocs.live_blocks(), 1u);
    EXPECT_EQ(delta_allocs.live_bytes(), 10u);
    const Counters in_transit = site_in_slot(snapshot, kFirst + 2).counters();
    EXPECT_EQ(in_transit.frees, 3u);
    EXPECT_EQ(in_transit.live_blocks(), 0u);
    EXPECT_EQ(in_transit.live_bytes(), 0u);

    // The rows see the sums too.
    std::map<uint32_t, Counters> row_counters;
    for (const ReportRow& row : report_rows(snapshot, Grouping::native))
        row_counters[row.id] = row.counters;
    ASSERT_EQ(row_counters.size(), 3u);
    EXPECT_EQ(row_counters[kFirst].live_bytes(), 200u);
    EXPECT_EQ(row_counters[kFirst + 1].live_blocks(), 1u);
    EXPECT_EQ(row_counters[kFirst + 2].live_blocks(), 0u);
    EXPECT_EQ(row_counters[kFirst + 2].live_bytes(), 0u);
}

TEST(ParseSegment, IgnoresTheDeltaOffsetWithoutADeltaTable) {
    auto builder = typical_builder();
    builder.site_delta_slots = 0;
    auto bytes = builder.build();
    patch_header(bytes, [](layout::Header& h) { h.site_deltas_offset = ~0ull - 8; });
    EXPECT_EQ(parse_error(bytes), "");
    EXPECT_EQ(site_in_slot(parse_segment(bytes), kFirst).counters().allocs, 10u);
}

TEST(ParseSegment, AcceptsTheLargestDeltaTable) {
    SegmentBuilder builder;
    builder.bin_shards = 2;
    builder.site_delta_slots = 4096;
    builder.sites = {{.allocs = 1, .alloc_bytes = 8}};
    builder.deltas = {{.shard = 1, .site = kFirst, .allocs = 1, .alloc_bytes = 8, .slot = 4095}};
    const auto snapshot = parse_segment(builder.build());
    EXPECT_EQ(site_in_slot(snapshot, kFirst).counters().allocs, 2u);
}

// The reader keeps a site's counts in 32 bits each while they fit, apart once one does not: counts
// beyond 32 bits come out whole, from the record or from a delta that carries the site over, and
// through copies and moves of the sites.
TEST(ParseSegment, KeepsCountsBeyondThirtyTwoBitsWhole) {
    constexpr uint64_t kMany = (uint64_t{5} << 32) + 7;
    constexpr uint64_t kNarrowest = std::numeric_limits<uint32_t>::max();
    SegmentBuilder builder;
    builder.sites = {
        {.allocs = kMany, .frees = 1, .alloc_bytes = kMany * 64, .free_bytes = 64, .frames = {0x1001}},
        {.allocs = kNarrowest, .alloc_bytes = kNarrowest, .frames = {0x1002}, .size_class = kClassOf10},
        {.allocs = 3, .frees = 1, .alloc_bytes = 300, .free_bytes = 100, .frames = {0x1003}},
    };
    builder.deltas = {{.shard = 0, .site = kFirst + 1, .allocs = 1, .alloc_bytes = 1}};
    const Snapshot snapshot = parse_segment(builder.build());
    const std::vector<Counters> expected = {
        {kMany, 1, kMany * 64, 64},
        {kNarrowest + 1, 0, kNarrowest + 1, 0},
        {3, 1, 300, 100},
    };
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(site_in_slot(snapshot, kFirst + static_cast<uint32_t>(i)).counters(), expected[i]) << i;

    std::vector<Site> copied = snapshot.sites;
    const std::vector<Site> moved = std::move(copied);
    ASSERT_EQ(moved.size(), snapshot.sites.size());
    for (std::size_t i = 0; i < moved.size(); ++i) {
        EXPECT_EQ(moved[i].counters(), snapshot.sites[i].counters()) << i;
        EXPECT_EQ(moved[i].id, snapshot.sites[i].id) << i;
        EXPECT_EQ(moved[i].stack(), snapshot.sites[i].stack()) << i;
    }
    Site assigned = site_in_slot(snapshot, kFirst);
    EXPECT_EQ(assigned.counters(), expected[0]);
    assigned = site_in_slot(snapshot, kFirst + 2);  // wide to narrow
    EXPECT_EQ(assigned.counters(), expected[2]);
    assigned.set_counters(expected[1]);  // narrow to wide
    EXPECT_EQ(assigned.counters(), expected[1]);
}

// 75k sites and a full table of 64 shards x 64 entries, every entry in use, as a busy writer
// leaves them: each entry is looked up once, so this stays quick.
TEST(ParseSegment, AddsTheDeltasOfAFullTableToManySites) {
    SegmentBuilder builder;
    builder.max_depth = 1;
    builder.site_capacity = kFirst + 75000;
    builder.sites.resize(75000, {.allocs = 1, .alloc_bytes = 16, .frames = {0x1000}});
    builder.bin_shards = 64;
    builder.site_delta_slots = 64;
    for (uint32_t shard = 0; shard < 64; ++shard)
        for (uint32_t slot = 0; slot < 64; ++slot)
            builder.deltas.push_back({.shard = shard,
                                      .site = kFirst + (shard * 1171 + slot) * 17 % 75000,
                                      .allocs = 1,
                                      .frees = 1,
                                      .alloc_bytes = 16,
                                      .free_bytes = 16,
                                      .slot = slot});
    const auto snapshot = parse_segment(builder.build());
    uint64_t allocs = 0, frees = 0;
    for (const Site& site : snapshot.sites) {
        allocs += site.counters().allocs;
        frees += site.counters().frees;
    }
    EXPECT_EQ(allocs, 75000u + 64 * 64);
    EXPECT_EQ(frees, 64u * 64);
    EXPECT_EQ(snapshot.totals.allocs, allocs);
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
        return *std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                             [&](const Site& s) { return s.id == id; });
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
    const Site& site = *std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                                     [](const Site& s) { return s.id == kFirst; });
    ASSERT_EQ(site.ruby().size(), 3u);
    EXPECT_EQ(site.ruby()[0].file, "app/controllers/leak_controller.rb");
    EXPECT_EQ(site.ruby()[0].line, 7u);
    EXPECT_EQ(site.ruby()[2].file, "puma/server.rb");
    EXPECT_EQ(site.ruby()[2].line, 444u);
    EXPECT_FALSE(site.reduced());
    EXPECT_TRUE(std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                             [](const Site& s) { return s.id == kFirst + 1; })->reduced());
}

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
    const auto frame_at = [&](uint32_t slot, uint32_t index) {
        return testing::ruby_frame_offset(bytes, slot, index);
    };
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
    EXPECT_EQ(backtrace(kFirst),
              (std::vector<RubyLocation>{{"app/models/user.rb", 42}, controller, server}));
    EXPECT_EQ(backtrace(kFirst + 1),
              (std::vector<RubyLocation>{{"app/models/post.rb", 9}, controller, server}));
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
        RubyFrameCorruption{
            "StackNamingARecordOutsideTheTable",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 1000; }); },
            "Ruby frame record at 8000 of site 88's stack at 48 lies outside the 272-byte stack table"},
        RubyFrameCorruption{
            "CallerOutsideTheTable",
            [](auto& bytes) { patch_frame(bytes, kFirst, 1, [](auto& frame) { frame.caller = 34; }); },
            "Ruby frame record at 272 of site 88's stack at 48 lies outside the 272-byte stack table"},
        RubyFrameCorruption{
            "RecordRunningPastTheTable",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 33; }); },
            "Ruby frame record at 264 of site 88's stack at 48 runs past the end of the 272-byte "
            "stack table"},
        // Past stacks_used: a record the writer never wrote, or one this copy did not take.
        RubyFrameCorruption{
            "RecordNeverWritten",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = 31; }); },
            "Ruby frame record at 248 of site 88's stack at 48 has depth 0, but the stack has 3 "
            "Ruby frames"},
        RubyFrameCorruption{
            "FewerRubyFramesThanTheBacktrace",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 2; }); },
            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the stack has 2 Ruby "
            "frames"},
        RubyFrameCorruption{
            "MoreRubyFramesThanTheBacktrace",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 4; }); },
            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the stack has 4 Ruby "
            "frames"},
        RubyFrameCorruption{
            "RubyFramesWithoutARecord",
            [](auto& bytes) {
                patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby = layout::kNoRubyFrame; });
            },
            "site 88's stack at 48 has 3 Ruby frames but names no Ruby frame record"},
        RubyFrameCorruption{
            "ARecordWithoutRubyFrames",
            [](auto& bytes) { patch_stack(bytes, kFirst, [](auto& stack) { stack.ruby_depth = 0; }); },
            "site 88's stack at 48 has no Ruby frames but names a Ruby frame record at 32"},
        RubyFrameCorruption{
            "DepthsNotFallingByOne",
            [](auto& bytes) { patch_frame(bytes, kFirst, 1, [](auto& frame) { frame.depth = 1; }); },
            "Ruby frame record at 16 of site 88's stack at 48 has depth 1, but the frame it calls "
            "has depth 3"},
        RubyFrameCorruption{
            "RecordCallingItself",
            [](auto& bytes) { patch_frame(bytes, kFirst, 0, [](auto& frame) { frame.caller = 4; }); },
            "Ruby frame record at 32 of site 88's stack at 48 has depth 3, but the frame it calls "
            "has depth 3"},
        // A cycle through the outermost frame.
        RubyFrameCorruption{
            "OutermostNamingACaller",
            [](auto& bytes) { patch_frame(bytes, kFirst, 2, [](auto& frame) { frame.caller = 2; }); },
            "Ruby frame record at 0 of site 88's stack at 48 has depth 1 but names a caller at 16"},
        RubyFrameCorruption{
            "InnerRecordNamingNoCaller",
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
            [](auto& bytes) {
                patch_frame(bytes, kFirst, 2, [](auto& frame) { frame.frame.file = 5000; });
            },
            "Ruby frame record at 0 of site 88's stack at 48: Ruby file string at offset 5000 has no "
            "NUL inside the 1024-byte string pool"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(ParseSegment, IgnoresTheFieldsOfSlotsThatAreNotReady) {
    auto bytes = typical_builder().build();
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, kFirst + 5),
                              [](layout::SiteRecord& site) {
                                  site.stack = 0xfffffff0u;
                                  site.size_class = 0xffu;
                                  site.birth_cell = 0xffu;
                              });
    EXPECT_EQ(parse_error(bytes), "");
}

struct SiteCorruption {
    const char* name;
    uint32_t slot;
    void (*corrupt)(layout::SiteRecord&);
    const char* expected_message_part;
};

void PrintTo(const SiteCorruption& corruption, std::ostream* out) { *out << corruption.name; }

class ParseSegmentCorruptSite : public ::testing::TestWithParam<SiteCorruption> {};

TEST_P(ParseSegmentCorruptSite, IsRejectedWithAClearMessage) {
    auto bytes = typical_builder().build();
    patch<layout::SiteRecord>(bytes, testing::site_offset(bytes, GetParam().slot),
                              GetParam().corrupt);
    EXPECT_PRED2(contains, parse_error(bytes), GetParam().expected_message_part);
}

// The typical segment's string pool is 1024 bytes; its first string starts at offset 0.
INSTANTIATE_TEST_SUITE_P(
    EveryV2Field, ParseSegmentCorruptSite,
    ::testing::Values(
        SiteCorruption{"SizeClassOutOfRange", kFirst,
                       [](layout::SiteRecord& s) { s.size_class = layout::kSizeClassCount; },
                       "site 88 has size class 88, there are 88"},
        SiteCorruption{"OverflowSiteWithAStack", 3, [](layout::SiteRecord& s) { s.stack = 0; },
                       "overflow site 3 must have no stack, size class 3 and birth cell 0"},
        SiteCorruption{"OverflowSiteOfAnotherClass", 3,
                       [](layout::SiteRecord& s) { s.size_class = 4; },
                       "overflow site 3 must have no stack, size class 3 and birth cell 0"},
        SiteCorruption{"OverflowSiteWithABirthCell", 3,
                       [](layout::SiteRecord& s) { s.birth_cell = 1; },
                       "overflow site 3 must have no stack, size class 3 and birth cell 0"},
        SiteCorruption{"SiteBornInACellBeyondTheGrid", kFirst,
                       [](layout::SiteRecord& s) { s.birth_cell = layout::kMaxBirthCells; },
                       "site 88 has birth cell 128, there are 128"},
        SiteCorruption{"SiteWithoutAStack", kFirst,
                       [](layout::SiteRecord& s) { s.stack = layout::kNoStack; },
                       "site 88 has no stack"}),
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
        h.command_line = {0, 0};
    });
    EXPECT_EQ(parse_segment(bytes).exe, "");
}

// libFuzzer will do this properly; here a cheap, deterministic sweep guards against crashes
// and hangs on garbage and on valid segments with a few bytes flipped.
TEST(ParseSegment, SurvivesGarbageAndBitFlips) {
    std::mt19937_64 random(20240601);
    auto previous_layout = ruby_builder();
    previous_layout.layout_version = 5;
    const std::vector<std::byte> valid[] = {typical_builder().build(), ruby_builder().build(),
                                            previous_layout.build()};
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
