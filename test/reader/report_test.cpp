#include "report.h"
#include "segment_builder.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace leakwrap {
namespace {

using testing::SegmentBuilder;

Snapshot three_sites() {
    SegmentBuilder builder;
    builder.overflow_site = {.allocs = 7, .frees = 7, .alloc_bytes = 70, .free_bytes = 70};
    builder.sites = {
        {.allocs = 1000, .frees = 0, .alloc_bytes = 51200000, .frames = {0x1234, 0x5678}},
        {.allocs = 9000, .frees = 8990, .alloc_bytes = 90000000, .free_bytes = 89999000},
        {.allocs = 20, .frees = 0, .alloc_bytes = 1000},  // same live bytes as site 2, more blocks
    };
    builder.lost_sites = 5;
    builder.command_line = "leaky \"quoted\", with comma";
    return parse_segment(builder.build());
}

std::vector<uint32_t> ids(const std::vector<const Site*>& sites) {
    std::vector<uint32_t> result;
    for (const Site* site : sites) result.push_back(site->id);
    return result;
}

std::string render(const Snapshot& snapshot, ReportOptions options) {
    Symbolizer symbolizer(snapshot.modules);
    std::ostringstream out;
    write_report(out, {snapshot, OwnerState::dead, symbolizer, options});
    return out.str();
}

TEST(RankedSites, SortsByLiveBytesThenLiveBlocksThenId) {
    EXPECT_EQ(ids(ranked_sites(three_sites(), {.top = 0})), (std::vector<uint32_t>{1, 3, 2, 0}));
}

TEST(RankedSites, SortsByAllocationCountOrAllocatedBytes) {
    EXPECT_EQ(ids(ranked_sites(three_sites(), {.top = 0, .sort = SortKey::allocs})),
              (std::vector<uint32_t>{2, 1, 3, 0}));
    EXPECT_EQ(ids(ranked_sites(three_sites(), {.top = 0, .sort = SortKey::bytes})),
              (std::vector<uint32_t>{2, 1, 3, 0}));
}

TEST(RankedSites, KeepsOnlyTheTopN) {
    EXPECT_EQ(ids(ranked_sites(three_sites(), {.top = 2})), (std::vector<uint32_t>{1, 3}));
    EXPECT_EQ(ranked_sites(three_sites(), {.top = 100}).size(), 4u);
}

TEST(HumanBytes, UsesBinaryUnitsWithOneDecimal) {
    EXPECT_EQ(human_bytes(0), "0 B");
    EXPECT_EQ(human_bytes(1023), "1023 B");
    EXPECT_EQ(human_bytes(1536), "1.5 KiB");
    EXPECT_EQ(human_bytes(51200000), "48.8 MiB");
    EXPECT_EQ(human_bytes(UINT64_MAX), "16.0 EiB");
}

TEST(TextReport, ShowsExactTotalsOverflowWarningAndRankedSites) {
    const std::string text = render(three_sites(), {.top = 1});
    EXPECT_NE(text.find("pid 2147483000 (dead (post-mortem))  /usr/bin/leaky"), std::string::npos)
        << text;
    EXPECT_NE(text.find("live: 51202000 B (48.8 MiB) in 1030 blocks; 10027 allocs, 8997 frees"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("4 sites"), std::string::npos) << text;
    EXPECT_NE(text.find("5 distinct stacks"), std::string::npos) << text;
    EXPECT_NE(text.find("LEAKWRAP_MAX_SITES"), std::string::npos) << text;
    EXPECT_NE(text.find("#1 site 1: 51200000 B (48.8 MiB) live in 1000 blocks"), std::string::npos)
        << text;
    EXPECT_NE(text.find("    #0 0x1234 ??"), std::string::npos) << text;
    EXPECT_NE(text.find("    #1 0x5678 ??"), std::string::npos) << text;
    EXPECT_EQ(text.find("#2 site"), std::string::npos) << text;
    EXPECT_NE(text.find("3 more sites not shown"), std::string::npos) << text;
}

TEST(TextReport, LabelsTheOverflowSite) {
    const std::string text = render(three_sites(), {.top = 0, .sort = SortKey::allocs});
    EXPECT_NE(text.find("#4 overflow site"), std::string::npos) << text;
}

TEST(JsonReport, HasTheDocumentedShape) {
    const auto report =
        nlohmann::json::parse(render(three_sites(), {.top = 2, .format = ReportFormat::json}));
    EXPECT_EQ(report["pid"], 2147483000);
    EXPECT_EQ(report["exe"], "/usr/bin/leaky");
    EXPECT_EQ(report["command_line"], "leaky \"quoted\", with comma");
    EXPECT_EQ(report["state"], "dead");
    const auto& totals = report["totals"];
    EXPECT_EQ(totals["live_bytes"], 51202000);
    EXPECT_EQ(totals["live_blocks"], 1030);
    EXPECT_EQ(totals["allocs"], 10027);
    EXPECT_EQ(totals["frees"], 8997);
    EXPECT_EQ(totals["alloc_bytes"], 141201070);
    EXPECT_EQ(totals["free_bytes"], 89999070);
    EXPECT_EQ(totals["sites"], 4);
    EXPECT_EQ(totals["lost_sites"], 5);

    ASSERT_EQ(report["sites"].size(), 2u);  // --top limits the sites, never the totals
    const auto& site = report["sites"][0];
    EXPECT_EQ(site["id"], 1);
    EXPECT_EQ(site["overflow"], false);
    EXPECT_EQ(site["live_bytes"], 51200000);
    EXPECT_EQ(site["live_blocks"], 1000);
    EXPECT_EQ(site["allocs"], 1000);
    EXPECT_EQ(site["frees"], 0);
    EXPECT_EQ(site["alloc_bytes"], 51200000);
    EXPECT_EQ(site["free_bytes"], 0);
    ASSERT_EQ(site["frames"].size(), 2u);
    const auto& frame = site["frames"][0];
    EXPECT_EQ(frame["addr"], "0x1234");
    EXPECT_TRUE(frame["function"].is_null());
    EXPECT_TRUE(frame["file"].is_null());
    EXPECT_TRUE(frame["line"].is_null());
    EXPECT_TRUE(frame.contains("module"));
}

TEST(JsonReport, MarksTheOverflowSite) {
    const auto report =
        nlohmann::json::parse(render(three_sites(), {.top = 0, .format = ReportFormat::json}));
    EXPECT_EQ(report["sites"].back()["id"], 0);
    EXPECT_EQ(report["sites"].back()["overflow"], true);
}

TEST(CsvReport, HasAHeaderAndOneQuotedRowPerSite) {
    SegmentBuilder builder;
    builder.sites = {{.allocs = 2, .alloc_bytes = 20, .frames = {0x10, 0x20}}};
    builder.modules = {{.path = "/odd, \"name\".so",
                        .start = 0x0,
                        .end = 0x100,
                        .unload_generation = layout::kStillLoaded}};
    const std::string csv = render(parse_segment(builder.build()), {.format = ReportFormat::csv});
    EXPECT_EQ(csv,
              "rank,id,live_bytes,live_blocks,allocs,frees,alloc_bytes,free_bytes,"
              "function,location,module,stack\n"
              "1,1,20,2,2,0,20,0,??,,\"/odd, \"\"name\"\".so\",??;??\n"
              "2,0,0,0,0,0,0,0,[overflow site],,,\n");
}

}  // namespace
}  // namespace leakwrap
