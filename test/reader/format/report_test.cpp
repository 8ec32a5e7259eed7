#include "report.h"
#include "report_labels.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

namespace leakwrap {
namespace {

using testing::kFirstSiteSlot;
using testing::SegmentBuilder;

constexpr uint32_t kClass10 = layout::size_class_of(10);

SegmentBuilder three_sites_builder() {
    SegmentBuilder builder;
    builder.overflow_sites[kClass10] = {.allocs = 7, .frees = 7, .alloc_bytes = 70, .free_bytes = 70};
    builder.sites = {
        {.allocs = 1000,
         .frees = 0,
         .alloc_bytes = 51200000,
         .frames = {0x1234, 0x5678},
         .ruby_file = "app/cache.rb",
         .ruby_line = 17},
        {.allocs = 9000, .frees = 8990, .alloc_bytes = 90000000, .free_bytes = 89999000, .frames = {0x9000}},
        // Same live bytes as site 89, more blocks.
        {.allocs = 20, .frees = 0, .alloc_bytes = 1000, .frames = {0x2000}},
    };
    builder.lost_sites = 5;
    builder.site_capacity = layout::kMinSiteCapacity + 2;  // every slot claimed: the table is full
    builder.command_line = "leaky \"quoted\", with comma";
    return builder;
}

Snapshot three_sites() { return parse_segment(three_sites_builder().build()); }

std::vector<uint32_t> ranked_ids(const Snapshot& snapshot, const ReportOptions& options) {
    const auto rows = report_rows(snapshot, options.by);
    std::vector<uint32_t> result;
    for (const ReportRow* row : ranked_rows(rows, options)) result.push_back(row->id);
    return result;
}

std::string render(const Snapshot& snapshot, ReportOptions options) {
    Symbolizer symbolizer(snapshot.modules, {});
    std::ostringstream out;
    write_report(out, {snapshot, OwnerState::dead, symbolizer, options});
    return out.str();
}

nlohmann::json render_json(const Snapshot& snapshot, ReportOptions options) {
    options.format = ReportFormat::json;
    return nlohmann::json::parse(render(snapshot, options));
}

std::set<std::string> keys_of(const nlohmann::json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.items()) keys.insert(key);
    return keys;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RankedRows, SortByLiveBytesThenLiveBlocksThenId) {
    EXPECT_EQ(ranked_ids(three_sites(), {.top = 0}),
              (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 2, kFirstSiteSlot + 1, kClass10}));
}

TEST(RankedRows, SortByAllocationCountOrAllocatedBytes) {
    const std::vector<uint32_t> expected{kFirstSiteSlot + 1, kFirstSiteSlot, kFirstSiteSlot + 2, kClass10};
    EXPECT_EQ(ranked_ids(three_sites(), {.top = 0, .sort = SortKey::allocs}), expected);
    EXPECT_EQ(ranked_ids(three_sites(), {.top = 0, .sort = SortKey::bytes}), expected);
}

TEST(RankedRows, KeepOnlyTheTopN) {
    EXPECT_EQ(ranked_ids(three_sites(), {.top = 2}), (std::vector<uint32_t>{kFirstSiteSlot, kFirstSiteSlot + 2}));
    EXPECT_EQ(ranked_ids(three_sites(), {.top = 100}).size(), 4u);
}

TEST(HumanBytes, UsesBinaryUnitsWithOneDecimal) {
    EXPECT_EQ(human_bytes(0), "0 B");
    EXPECT_EQ(human_bytes(1023), "1023 B");
    EXPECT_EQ(human_bytes(1536), "1.5 KiB");
    EXPECT_EQ(human_bytes(51200000), "48.8 MiB");
    EXPECT_EQ(human_bytes(UINT64_MAX), "16.0 EiB");
}

TEST(SizeClassLabel, PrintsEveryLimitExactly) {
    EXPECT_EQ(size_class_label(0), "≤8 B");
    EXPECT_EQ(size_class_label(layout::size_class_of(320)), "≤320 B");
    EXPECT_EQ(size_class_label(layout::size_class_of(1025)), "≤1.25 KiB");
    EXPECT_EQ(size_class_label(layout::size_class_of(1537)), "≤1.75 KiB");
    EXPECT_EQ(size_class_label(layout::size_class_of(uint64_t{4} << 20)), "≤4 MiB");
    EXPECT_EQ(size_class_label(layout::kSizeClassCount - 2), "≤1 TiB");
    EXPECT_EQ(size_class_label(layout::kSizeClassCount - 1), "> 1 TiB");
    EXPECT_EQ(size_class_limit_bytes(layout::size_class_of(320)), 320u);
    EXPECT_EQ(size_class_limit_bytes(layout::kSizeClassCount - 1), std::nullopt);
}

TEST(TextReport, ShowsExactTotalsOverflowWarningAndRankedRows) {
    const std::string text = render(three_sites(), {.top = 1});
    EXPECT_PRED2(contains, text, "pid 2147483000 (dead (post-mortem))  /usr/bin/leaky");
    EXPECT_PRED2(contains, text, "live: 51202000 B (48.8 MiB) in 1030 blocks; 10027 allocs, 8997 frees");
    EXPECT_PRED2(contains, text, "; 4 sites\n");
    EXPECT_PRED2(contains, text, "5 allocations from stacks without a record");
    EXPECT_PRED2(contains, text, "LEAKWRAP_MAX_SITES");
    EXPECT_PRED2(contains, text, "\n#1 site 88: 51200000 B (48.8 MiB) live in 1000 blocks");
    EXPECT_PRED2(contains, text,
                 "allocated\n    ruby: app/cache.rb:17\n    live born 0.0 s to 0.5 s\n    #0 0x1234 ??");
    EXPECT_PRED2(contains, text, "    #1 0x5678 ??");
    // The Ruby backtrace continues the native frames outwards.
    EXPECT_PRED2(contains, text, "    #2 ruby app/cache.rb:17\n");
    EXPECT_FALSE(contains(text, "\n#2 ")) << text;
    EXPECT_PRED2(contains, text, "3 more rows not shown");
    EXPECT_FALSE(contains(text, "estimated")) << text;
}

TEST(TextReport, LabelsTheOverflowRow) {
    const std::string text = render(three_sites(), {.top = 0, .sort = SortKey::allocs});
    EXPECT_PRED2(contains, text, "#4 overflow site");
}

TEST(TextReport, ListsTheSizeClassesHoldingMostOfARowsLiveBlocks) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 3, .alloc_bytes = 96, .frames = {0xa}},
                     {.allocs = 1, .alloc_bytes = 1000, .frames = {0xa}}};
    EXPECT_PRED2(contains, render(parse_segment(builder.build()), {}), "    live by size class: ≤32 B 3, ≤1 KiB 1\n");

    // Most live blocks first, at most four classes, and none without live blocks.
    builder.sites = {{.allocs = 1, .alloc_bytes = 8, .frames = {0xa}},
                     {.allocs = 2, .alloc_bytes = 32, .frames = {0xa}},
                     {.allocs = 3, .alloc_bytes = 96, .frames = {0xa}},
                     {.allocs = 4, .alloc_bytes = 256, .frames = {0xa}},
                     {.allocs = 5, .alloc_bytes = 400, .frames = {0xa}},
                     {.allocs = 6, .alloc_bytes = 576, .frames = {0xa}},
                     {.allocs = 7, .frees = 7, .alloc_bytes = 7000, .free_bytes = 7000, .frames = {0xa}}};
    EXPECT_PRED2(contains, render(parse_segment(builder.build()), {}),
                 "    live by size class: ≤96 B 6, ≤80 B 5, ≤64 B 4, ≤32 B 3 and 2 more\n");
}

// The same loss with room left in the tables was /dev/shm's: raising LEAKWRAP_MAX_SITES would
// not help, and the text and JSON say so.
TEST(TextReport, SaysDevShmWasFullWhenTheTablesHadRoomLeft) {
    auto builder = three_sites_builder();
    builder.site_capacity = layout::kMinSiteCapacity + 100;
    builder.command_line = "";
    const Snapshot snapshot = parse_segment(builder.build());
    const std::string text = render(snapshot, {.top = 0});
    EXPECT_PRED2(contains, text, "\nwarning: /dev/shm was full: 5 allocations from stacks it had no room");
    EXPECT_PRED2(contains, text, "command: (not recorded: /dev/shm was full)\n");
    EXPECT_PRED2(contains, text, "overflow site (allocations from stacks that found no room in /dev/shm)");
    EXPECT_FALSE(contains(text, "raise LEAKWRAP_MAX_SITES")) << text;
    EXPECT_EQ(render_json(snapshot, {})["totals"]["lost_sites_because"], "dev_shm_full");
    EXPECT_EQ(render_json(three_sites(), {})["totals"]["lost_sites_because"], "site_table_full");
}

TEST(TextReport, ByRubyTitlesEachRowWithItsLocation) {
    const std::string text = render(three_sites(), {.top = 0, .by = Grouping::ruby});
    EXPECT_PRED2(contains, text, "\n#1 ruby app/cache.rb:17: 51200000 B");
    EXPECT_PRED2(contains, text, "\n#2 (no Ruby frame): 2000 B (2.0 KiB) live in 30 blocks");
    EXPECT_FALSE(contains(text, "#0 0x1234")) << text;
}

TEST(TextReport, SaysWhatIsEstimatedInSamplingMode) {
    auto builder = three_sites_builder();
    builder.sample_interval = 4096;
    const std::string text = render(parse_segment(builder.build()), {.top = 0});
    EXPECT_PRED2(contains, text,
                 "sampled (LEAKWRAP_SAMPLE=4096): the totals are exact, the "
                 "numbers per site are estimated\n");
    EXPECT_PRED2(contains, text, "#1 site 88 (estimated): ");
    EXPECT_PRED2(contains, text,
                 "overflow site (allocations from stacks that found the site table "
                 "full) (estimated): ");
}

TEST(TextReport, BinsShowsTheSizeClassTableInsteadOfTheRows) {
    const std::string text = render(three_sites(), {.bins = true});
    EXPECT_PRED2(contains, text, "live: 51202000 B");
    EXPECT_PRED2(contains, text,
                 "size classes (exact, every block):\n"
                 "  CLASS               ALLOCS         FREES   LIVE_BLOCKS    "
                 "LIVE_BYTES\n"
                 "  ≤16 B                    7             7             0"
                 "           0 B\n");
    EXPECT_PRED2(contains, text, "          1000 live  site 88  ??  ruby: app/cache.rb:17\n");
    EXPECT_FALSE(contains(text, "#1 site")) << text;
}

TEST(JsonReport, HasTheDocumentedShape) {
    const auto report = render_json(three_sites(), {.top = 2});
    EXPECT_EQ(keys_of(report),
              (std::set<std::string>{"pid", "parent_pid", "exe", "command_line", "state", "mode", "sample_interval",
                                     "totals_estimated", "by", "totals", "sites", "bins", "births"}));
    EXPECT_EQ(report["pid"], 2147483000);
    EXPECT_EQ(report["exe"], "/usr/bin/leaky");
    EXPECT_EQ(report["command_line"], "leaky \"quoted\", with comma");
    EXPECT_EQ(report["state"], "dead");
    EXPECT_EQ(report["mode"], "exact");
    EXPECT_EQ(report["sample_interval"], 0);
    EXPECT_EQ(report["by"], "native");
    const auto& totals = report["totals"];
    EXPECT_EQ(keys_of(totals), (std::set<std::string>{"live_bytes", "live_blocks", "allocs", "frees", "alloc_bytes",
                                                      "free_bytes", "sites", "lost_sites", "lost_sites_because",
                                                      "memory", "sites_live_blocks", "sites_live_bytes"}));
    EXPECT_TRUE(totals["memory"].is_null()) << "a dead process has no RSS";
    EXPECT_EQ(totals["live_bytes"], 51202000);
    EXPECT_EQ(totals["live_blocks"], 1030);
    EXPECT_EQ(totals["allocs"], 10027);
    EXPECT_EQ(totals["frees"], 8997);
    EXPECT_EQ(totals["alloc_bytes"], 141201070);
    EXPECT_EQ(totals["free_bytes"], 89999070);
    EXPECT_EQ(totals["sites"], 4);
    EXPECT_EQ(totals["lost_sites"], 5);

    ASSERT_EQ(report["sites"].size(), 2u);  // --top limits the rows, never the totals
    const auto& row = report["sites"][0];
    EXPECT_EQ(keys_of(row), (std::set<std::string>{"id", "overflow", "estimated", "live_bytes", "live_blocks", "allocs",
                                                   "frees", "alloc_bytes", "free_bytes", "ruby", "ruby_frames",
                                                   "reduced", "frames", "size_classes", "records", "live_by_birth"}));
    EXPECT_EQ(row["id"], 88);
    EXPECT_EQ(row["overflow"], false);
    EXPECT_EQ(row["estimated"], false);
    EXPECT_EQ(row["live_bytes"], 51200000);
    EXPECT_EQ(row["live_blocks"], 1000);
    EXPECT_EQ(row["allocs"], 1000);
    EXPECT_EQ(row["frees"], 0);
    EXPECT_EQ(row["alloc_bytes"], 51200000);
    EXPECT_EQ(row["free_bytes"], 0);
    EXPECT_EQ(row["ruby"], (nlohmann::json{{"file", "app/cache.rb"}, {"line", 17}}));
    EXPECT_EQ(row["records"], (nlohmann::json{88}));
    const uint32_t size_class = layout::size_class_of(51200);
    EXPECT_EQ(row["size_classes"], (nlohmann::json{{{"class", size_class},
                                                    {"limit", layout::size_class_limit(size_class)},
                                                    {"live_blocks", 1000},
                                                    {"live_bytes", 51200000},
                                                    {"allocs", 1000},
                                                    {"frees", 0}}}));
    ASSERT_EQ(row["frames"].size(), 2u);
    const auto& frame = row["frames"][0];
    EXPECT_EQ(frame["addr"], "0x1234");
    EXPECT_TRUE(frame["function"].is_null());
    EXPECT_TRUE(frame["file"].is_null());
    EXPECT_TRUE(frame["line"].is_null());
    EXPECT_TRUE(frame.contains("module"));
    EXPECT_TRUE(report["sites"][1]["ruby"].is_null());
}

TEST(JsonReport, AlwaysHasTheSizeClassTable) {
    const auto report = render_json(three_sites(), {.top = 1});
    const auto& bins = report["bins"];
    ASSERT_EQ(bins.size(), 4u);  // 10, 50, 10000 and 51200-byte blocks
    EXPECT_EQ(bins[0], (nlohmann::json{{"class", kClass10},
                                       {"limit", 16},
                                       {"allocs", 7},
                                       {"frees", 7},
                                       {"live_blocks", 0},
                                       {"live_bytes", 0},
                                       {"top_sites", nlohmann::json::array()}}));
    // Row ids, whether or not --top printed those rows.
    EXPECT_EQ(bins[2]["class"], layout::size_class_of(10000));
    EXPECT_EQ(bins[2]["top_sites"], (nlohmann::json{89}));
    EXPECT_EQ(bins[3]["top_sites"], (nlohmann::json{88}));
}

TEST(JsonReport, GivesTheUnboundedClassANullLimit) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 1, .alloc_bytes = (uint64_t{1} << 40) + 1}};
    const auto report = render_json(parse_segment(builder.build()), {});
    EXPECT_EQ(report["bins"][0]["class"], layout::kSizeClassCount - 1);
    EXPECT_TRUE(report["bins"][0]["limit"].is_null());
    EXPECT_TRUE(report["sites"][0]["size_classes"][0]["limit"].is_null());
}

TEST(JsonReport, MarksTheOverflowRow) {
    const auto report = render_json(three_sites(), {.top = 0});
    EXPECT_EQ(report["sites"].back()["id"], kClass10);
    EXPECT_EQ(report["sites"].back()["overflow"], true);
    EXPECT_EQ(report["sites"].back()["frames"], nlohmann::json::array());
}

TEST(JsonReport, ByRubyRowsHaveALocationAndNoFrames) {
    const auto report = render_json(three_sites(), {.top = 0, .by = Grouping::ruby});
    EXPECT_EQ(report["by"], "ruby");
    ASSERT_EQ(report["sites"].size(), 3u);
    EXPECT_EQ(report["sites"][0]["ruby"], (nlohmann::json{{"file", "app/cache.rb"}, {"line", 17}}));
    EXPECT_EQ(report["sites"][0]["frames"], nlohmann::json::array());
    EXPECT_TRUE(report["sites"][1]["ruby"].is_null());
    EXPECT_EQ(report["sites"][1]["records"], (nlohmann::json{89, 90}));
    EXPECT_EQ(report["totals"]["sites"], 4);
}

TEST(JsonReport, MarksEstimatesInSamplingMode) {
    auto builder = three_sites_builder();
    builder.sample_interval = 1 << 20;
    const auto report = render_json(parse_segment(builder.build()), {.top = 0});
    EXPECT_EQ(report["mode"], "sampled");
    EXPECT_EQ(report["sample_interval"], 1 << 20);
    for (const auto& row : report["sites"]) EXPECT_EQ(row["estimated"], true);
    EXPECT_EQ(report["totals"]["allocs"], 10027) << "totals come from the exact bins";
    EXPECT_GT(report["sites"][0]["allocs"].get<uint64_t>(), 1000u);
}

TEST(CsvReport, HasAHeaderAndOneQuotedRowPerRow) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 2, .alloc_bytes = 20, .frames = {0x10, 0x20}},
                     {.allocs = 1, .alloc_bytes = 8, .frames = {0x30}, .ruby_file = "a,b.rb", .ruby_line = 3}};
    builder.overflow_sites[0] = {.allocs = 1, .alloc_bytes = 1};
    builder.modules = {
        {.path = "/odd, \"name\".so", .start = 0x0, .end = 0x100, .unload_generation = layout::kStillLoaded}};
    const std::string csv = render(parse_segment(builder.build()), {.format = ReportFormat::csv});
    EXPECT_EQ(csv,
              "rank,id,live_bytes,live_blocks,allocs,frees,alloc_bytes,free_bytes,"
              "function,location,module,stack,ruby,estimated\n"
              "1,88,20,2,2,0,20,0,??,,\"/odd, \"\"name\"\".so\",??;??,,false\n"
              "2,89,8,1,1,0,8,0,??,,\"/odd, \"\"name\"\".so\",??,\"a,b.rb:3\",false\n"
              "3,0,1,1,1,0,1,0,[overflow site],,,,,false\n");
}

TEST(CsvReport, BinsIsTheSizeClassTable) {
    const std::string csv = render(three_sites(), {.format = ReportFormat::csv, .by = Grouping::ruby, .bins = true});
    EXPECT_EQ(csv.substr(0, csv.find('\n') + 1),
              "class,limit,allocs,frees,live_blocks,live_bytes,top_sites,top_sites_summary\n");
    EXPECT_PRED2(contains, csv, "\n1,16,7,7,0,0,,\n");
    EXPECT_PRED2(contains, csv,
                 "," + std::to_string(layout::size_class_limit(layout::size_class_of(51200))) +
                     ",1000,0,1000,51200000,88,ruby: app/cache.rb:17\n");
}

}  // namespace
}  // namespace leakwrap
