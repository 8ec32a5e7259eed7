// Live memory by age (reader/rows/birth_window.h) on built segments whose records were born in
// known cells of the writer's grid: which records --born-after and --born-before keep, how a
// moment inside a cell is taken to its start, what a row's live blocks say of their births, and
// the grid's times as the report shows them.
#include "birth_window.h"
#include "report.h"
#include "segment_builder.h"
#include "segment_parser.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace leakwrap {
namespace {

using testing::SegmentBuilder;

constexpr uint64_t kSecond = 1'000'000'000;

// Start-up memory in cell 0 (0 to 0.5 s), a leak in cells 4 (2.0 to 2.5 s) and 12 (6.4 to 7.2 s),
// the leak's cell 3 freed entirely, and an overflow site with live blocks.
SegmentBuilder aged_builder() {
    SegmentBuilder builder;
    builder.overflow_sites[layout::size_class_of(10)] = {.allocs = 3, .frees = 0, .alloc_bytes = 30};
    builder.sites = {
        {.allocs = 2000, .alloc_bytes = 20'000'000, .frames = {0x1000}, .birth_cell = 0},
        {.allocs = 100, .alloc_bytes = 10'000, .frames = {0x2000}, .birth_cell = 4},
        {.allocs = 50, .alloc_bytes = 5'000, .frames = {0x2000}, .birth_cell = 12},
        {.allocs = 10, .frees = 10, .alloc_bytes = 1000, .free_bytes = 1000, .frames = {0x2000}, .birth_cell = 3},
    };
    return builder;
}

std::vector<uint64_t> kept_live_bytes(Snapshot snapshot, const BirthWindow& window) {
    keep_births_within(snapshot, window);
    std::vector<uint64_t> bytes;
    for (const Site& site : snapshot.sites) bytes.push_back(site.counters().live_bytes());
    return bytes;
}

TEST(BirthGrid, CellsAreTheWritersHalfSecondsThenEighthsOfTheAge) {
    const BirthGrid grid{0, layout::kBirthFloorNs, layout::kMaxBirthCells};
    EXPECT_EQ(grid.cell_start_ns(4), 2 * kSecond);
    EXPECT_EQ(grid.cell_end_ns(7), 4 * kSecond);
    EXPECT_EQ(grid.cell_end_ns(8), 4 * kSecond + kSecond / 2);
    EXPECT_EQ(grid.cell_end_ns(grid.cells - 1), std::nullopt);
    for (uint32_t cell = 8; cell + 1 < grid.cells; ++cell)
        EXPECT_EQ(*grid.cell_end_ns(cell) - grid.cell_start_ns(cell), grid.cell_start_ns(cell) / 8) << cell;
    EXPECT_EQ(grid.cell_at(0), 0u);
    EXPECT_EQ(grid.cell_at(2 * kSecond - 1), 3u);
    EXPECT_EQ(grid.cell_at(2 * kSecond), 4u);
    EXPECT_EQ(grid.cell_at(UINT64_MAX / 2), grid.cells - 1);
}

TEST(BirthWindow, KeepsTheRecordsBornFromTheCellOfTheMomentOn) {
    const Snapshot snapshot = parse_segment(aged_builder().build());
    // 2.2 s lies in cell 4, which starts at 2.0 s: cell 4 and later, the overflow site left out.
    EXPECT_EQ(kept_live_bytes(snapshot, {.after_ns = 2 * kSecond + kSecond / 5}),
              (std::vector<uint64_t>{10'000, 5'000}));
    EXPECT_EQ(kept_live_bytes(snapshot, {.before_ns = 2 * kSecond}), (std::vector<uint64_t>{20'000'000, 0}));
    EXPECT_EQ(kept_live_bytes(snapshot, {.after_ns = kSecond, .before_ns = 5 * kSecond}),
              (std::vector<uint64_t>{10'000, 0}));
    Snapshot narrowed = snapshot;
    keep_births_within(narrowed, {.after_ns = 2 * kSecond});
    ASSERT_TRUE(narrowed.birth_selection);
    EXPECT_EQ(narrowed.birth_selection->first_cell, 4u);
    EXPECT_EQ(narrowed.birth_selection->live_bytes_kept, 15'000u);
    EXPECT_EQ(narrowed.birth_selection->live_blocks_kept, 150u);
    EXPECT_EQ(narrowed.birth_selection->live_bytes_left_out, 20'000'030u);  // start-up and overflow
    EXPECT_EQ(narrowed.totals.live_bytes(), snapshot.totals.live_bytes());  // the totals stay whole
}

TEST(BirthWindow, TimesAreSinceTheProcessStartedEvenForAChildOfAnEarlierGrid) {
    auto builder = aged_builder();
    // A child forked 10 s after its parent started keeps the parent's grid.
    builder.birth_origin_boot_ns = builder.start_time_ticks * 10'000'000 - 10 * kSecond;
    const Snapshot snapshot = parse_segment(builder.build());
    const auto times = BirthTimes::of(snapshot);
    ASSERT_TRUE(times);
    EXPECT_EQ(times->start_ns(4), 2 * int64_t(kSecond) - 10 * int64_t(kSecond));
    // 1 s after the child started is 11 s into the grid: cell 8 + ... the cell that holds it.
    EXPECT_EQ(times->cell_at(kSecond), snapshot.births->cell_at(11 * kSecond));
    EXPECT_EQ(birth_time_text(-8 * int64_t(kSecond)), "-8.0 s");
}

TEST(BirthWindow, ARowSaysWhenItsLiveBlocksWereBornAndALayoutWithoutBirthsRefuses) {
    const Snapshot snapshot = parse_segment(aged_builder().build());
    const auto rows = report_rows(snapshot, Grouping::native);
    const auto leak =
        std::find_if(rows.begin(), rows.end(), [](const ReportRow& row) { return row.records().size() == 3; });
    ASSERT_NE(leak, rows.end());
    const auto cells = live_by_birth(*leak, snapshot);
    ASSERT_EQ(cells.size(), 2u);  // cell 3's blocks are all freed
    EXPECT_EQ(cells[0].cell, 4u);
    EXPECT_EQ(cells[0].counters.live_blocks(), 100u);
    EXPECT_EQ(cells[1].cell, 12u);
    EXPECT_EQ(birth_span_text(*BirthTimes::of(snapshot), 4, 12), "born 2.0 s to 7.2 s");

    auto old = aged_builder();
    old.layout_version = 7;
    for (auto& site : old.sites) site.birth_cell = 0;
    Snapshot without = parse_segment(old.build());
    EXPECT_FALSE(without.births);
    EXPECT_THROW(keep_births_within(without, {.after_ns = kSecond}), std::runtime_error);
}

TEST(BirthWindow, TextAndJsonStateTheGridAndWhatWasKept) {
    Snapshot snapshot = parse_segment(aged_builder().build());
    keep_births_within(snapshot, {.after_ns = 2 * kSecond});
    Symbolizer symbolizer(snapshot.modules, {});
    ReportOptions options;
    std::ostringstream text;
    write_report(text, {snapshot, OwnerState::dead, symbolizer, options});
    EXPECT_NE(text.str().find("births: known to 0.5 s for the first 4.0 s, then to 1/8 of the time since the start\n"
                              "born from 2.0 s"),
              std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("    live born 2.0 s to 7.2 s\n"), std::string::npos) << text.str();
    options.format = ReportFormat::json;
    std::ostringstream json_text;
    write_report(json_text, {snapshot, OwnerState::dead, symbolizer, options});
    const auto json = nlohmann::json::parse(json_text.str());
    EXPECT_EQ(json["births"]["selection"]["from_s"], 2.0);
    EXPECT_EQ(json["births"]["selection"]["live_bytes"], 15'000);
    EXPECT_NEAR(json["sites"][0]["live_by_birth"][1]["from_s"].get<double>(), 6.4072265625, 1e-6);
}

}  // namespace
}  // namespace leakwrap
