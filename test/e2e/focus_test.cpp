// --focus, --ignore, --hide-runtime, --site and the short C++ names, on focus_targets run under
// the preload and read by the real leakwrap-report: the rows kept hold exactly what the program
// leaked there (ground_truth.h), in every format.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <stdlib.h>

#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

using namespace ground_truth::focus_targets;

long long as_count(std::size_t value) { return static_cast<long long>(value); }

// One focus_targets process for all tests: it only waits once it has leaked.
class Focus : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        target_ = new Target({paths::program("focus_targets")}, Environment::profiled());
        target_->wait_ready();
    }
    static void TearDownTestSuite() {
        EXPECT_EQ(target_->release_and_wait(), 0);
        delete target_;
    }

    static std::string pid() { return std::to_string(target_->pid()); }

    static nlohmann::json json_with(const std::vector<std::string>& arguments) {
        return report_json(target_->pid(), arguments);
    }

    static std::string text_with(std::vector<std::string> arguments) {
        arguments.insert(arguments.begin(), pid());
        const Completed report = run_report(arguments);
        EXPECT_EQ(report.exit_code, 0) << report.err;
        return report.out;
    }

    // The id of the one row with a frame whose function contains `fragment`.
    static uint64_t id_of_row_calling(const std::string& fragment) {
        const nlohmann::json report = json_with({});
        for (const nlohmann::json& site : report.at("sites"))
            for (const nlohmann::json& frame : site.at("frames"))
                if (frame.at("function").is_string() &&
                    frame.at("function").get<std::string>().find(fragment) != std::string::npos)
                    return site.at("id").get<uint64_t>();
        ADD_FAILURE() << "no row calls " << fragment;
        return 0;
    }

    static Target* target_;
};

Target* Focus::target_ = nullptr;

const Counters kPlain{as_count(kPlainCount), as_count(kPlainCount* kPlainSize), as_count(kPlainCount), 0};
const Counters kStrdup{as_count(kStrdupCount), as_count(kStrdupCount*(kStrdupLength + 1)), as_count(kStrdupCount), 0};
const Counters kRegistry{as_count(kRegistryCount), as_count(kRegistryCount* kRegistrySize), as_count(kRegistryCount),
                         0};

TEST_F(Focus, FocusKeepsOnlyTheRowsWithAFrameItMatchesAndTheTotalsStayWhole) {
    const nlohmann::json all = json_with({});
    const nlohmann::json focused = json_with({"--focus", "leak_in_plain"});
    ASSERT_EQ(focused.at("sites").size(), 1u) << focused.at("sites").dump(2);
    EXPECT_EQ(sites_calling(focused, "leak_in_plain_function()", 1).counters, kPlain);
    EXPECT_EQ(focused.at("totals").at("live_bytes"), all.at("totals").at("live_bytes"));
    const nlohmann::json& selection = focused.at("selection");
    EXPECT_EQ(selection.at("rows"), 1);
    EXPECT_EQ(selection.at("all_rows"), all.at("sites").size());
    EXPECT_EQ(selection.at("live_bytes"), as_count(kPlainCount * kPlainSize));
    EXPECT_EQ(selection.at("focus"), "--focus leak_in_plain");
    EXPECT_FALSE(all.contains("selection"));
}

TEST_F(Focus, APatternMatchesModulesAndSourceFilesToo) {
    // Only the template's blocks come through libstdc++'s operator new.
    const nlohmann::json by_module = json_with({"--focus", R"(libstdc\+\+\.so)"});
    EXPECT_EQ(sites_calling_function_containing(by_module, "::remember(", 2).counters, kRegistry);
    EXPECT_EQ(sites_calling(by_module, "leak_in_plain_function()", 1).sites, 0u);
    EXPECT_EQ(sites_calling(by_module, "leak_through_strdup()", 2).sites, 0u);
    // handshake.h is where the program says READY, whose stdout buffer is the only row there.
    const nlohmann::json by_file = json_with({"--focus", R"(/handshake\.h$)"});
    ASSERT_EQ(by_file.at("sites").size(), 1u) << by_file.at("sites").dump(2);
    EXPECT_EQ(sites_calling_function_containing(by_file, "announce_ready", 16).sites, 1u);
}

TEST_F(Focus, IgnoreDropsTheRowsItMatchesAndCombinesWithFocus) {
    const nlohmann::json ignored = json_with({"--ignore", "strdup", "--ignore", "Registry"});
    EXPECT_EQ(sites_calling(ignored, "leak_through_strdup()", 2).sites, 0u);
    EXPECT_EQ(sites_calling_function_containing(ignored, "Registry", 2).sites, 0u);
    EXPECT_EQ(sites_calling(ignored, "leak_in_plain_function()", 1).counters, kPlain);
    // Patterns are searched in each name alone, so ^ anchors at a function's first character.
    const nlohmann::json both = json_with({"--focus", "^leak_", "--ignore", "strdup"});
    ASSERT_EQ(both.at("sites").size(), 1u) << both.at("sites").dump(2);
    EXPECT_EQ(sites_calling(both, "leak_in_plain_function()", 1).counters, kPlain);
}

TEST_F(Focus, FocusAppliesBeforeTopInEveryFormat) {
    const uint64_t plain = id_of_row_calling("leak_in_plain_function");
    const std::vector<std::string> focus = {"--focus", "leak_in_plain", "--top", "1"};
    const auto with = [&](std::vector<std::string> more) {
        more.insert(more.begin(), focus.begin(), focus.end());
        return text_with(more);
    };
    // The plain row holds less than the template's, so --top 1 without --focus would not show it.
    const std::string text = with({});
    EXPECT_NE(text.find("focus (--focus leak_in_plain): 1 of "), std::string::npos) << text;
    EXPECT_NE(text.find("#1 site " + std::to_string(plain) + ": " + std::to_string(kPlainCount * kPlainSize) + " B"),
              std::string::npos)
        << text;

    const std::string csv = with({"--format", "csv"});
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << csv;
    EXPECT_NE(csv.find("\n1," + std::to_string(plain) + "," + std::to_string(kPlainCount * kPlainSize)),
              std::string::npos)
        << csv;

    const std::string folded = with({"--format", "folded"});
    EXPECT_EQ(std::count(folded.begin(), folded.end(), '\n'), 1) << folded;
    EXPECT_TRUE(folded.ends_with(";leak_in_plain_function() " + std::to_string(kPlainCount * kPlainSize) + "\n"))
        << folded;

    const std::string metrics = with({"--format", "prometheus"});
    std::istringstream lines(metrics);
    std::size_t site_samples = 0;
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with("leakwrap_site_live_bytes{")) {
            ++site_samples;
            EXPECT_NE(line.find("site=\"" + std::to_string(plain) + "\""), std::string::npos) << line;
            EXPECT_TRUE(line.ends_with(" " + std::to_string(kPlainCount * kPlainSize))) << line;
        }
    EXPECT_EQ(site_samples, 1u) << metrics;
}

TEST_F(Focus, HideRuntimeLeavesOutTheRuntimesAndTheStartInTextAndJson) {
    const nlohmann::json report = json_with({"--hide-runtime"});
    for (const nlohmann::json& site : report.at("sites")) {
        EXPECT_GE(site.at("hidden_frames").get<int>(), 2) << "__libc_start_* and _start at least";
        for (const nlohmann::json& frame : site.at("frames")) {
            const std::string module = frame.at("module").is_string() ? frame.at("module").get<std::string>() : "";
            EXPECT_EQ(module.find("libc.so"), std::string::npos) << frame.dump();
            EXPECT_EQ(module.find("libstdc++"), std::string::npos) << frame.dump();
            EXPECT_NE(frame.at("function"), "_start");
        }
    }
    // Each leak's innermost frame shown is the program's own function, not the allocator it called.
    EXPECT_EQ(sites_calling(report, "leak_through_strdup()", 1).counters, kStrdup);
    EXPECT_EQ(sites_calling_function_containing(report, "::remember(", 1).counters, kRegistry);
    EXPECT_EQ(sites_calling(report, "leak_in_plain_function()", 1).counters, kPlain);

    const std::string text = text_with({"--hide-runtime"});
    EXPECT_EQ(text.find("_start"), std::string::npos) << text;
    EXPECT_EQ(text.find("strdup.c"), std::string::npos) << text;
    EXPECT_NE(text.find("runtime frames hidden: --hide-runtime)"), std::string::npos) << text;
    // Shown frames keep their place in the stack: the strdup row starts at #1.
    EXPECT_NE(text.find("    #1 0x"), std::string::npos) << text;
}

TEST_F(Focus, TextShortensLongCppNamesAndJsonAndFullNamesKeepThem) {
    const std::string text = text_with({});
    EXPECT_NE(text.find(" focus_targets::Registry<…>::remember(…) at "), std::string::npos) << text;
    EXPECT_EQ(text.find("std::map<"), std::string::npos) << text;
    // Short names are left alone.
    EXPECT_NE(text.find(" leak_in_plain_function() at "), std::string::npos) << text;

    const std::string full = text_with({"--full-names"});
    EXPECT_NE(full.find("focus_targets::Registry<std::map<std::__cxx11::basic_string<char"), std::string::npos) << full;
    EXPECT_EQ(sites_calling_function_containing(json_with({}),
                                                "focus_targets::Registry<std::map<std::__cxx11::basic_string<char", 2)
                  .counters,
              kRegistry);
}

TEST_F(Focus, SiteShowsOneRowInFullWithEverySizeClassAndFullNames) {
    const uint64_t registry = id_of_row_calling("::remember(");
    const std::string id = std::to_string(registry);
    const std::string text = text_with({"--site", id});
    EXPECT_NE(text.find("#1 site " + id + ": " + std::to_string(kRegistryCount * kRegistrySize) + " B"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("\n#2 site"), std::string::npos) << "one row only: " << text;
    EXPECT_NE(text.find("size classes:"), std::string::npos) << text;
    EXPECT_NE(text.find("≤3 KiB"), std::string::npos) << text;
    EXPECT_NE(text.find("Registry<std::map<"), std::string::npos) << "full names: " << text;
    EXPECT_NE(text.find(" _start ("), std::string::npos) << "every frame: " << text;
    EXPECT_NE(text.find("operator new"), std::string::npos) << text;

    const nlohmann::json report = json_with({"--site", id});
    ASSERT_EQ(report.at("sites").size(), 1u);
    EXPECT_EQ(report.at("sites")[0].at("id"), registry);
    EXPECT_EQ(report.at("selection").at("site"), registry);

    const Completed missing = run_report({pid(), "--site", "4000000000"});
    EXPECT_EQ(missing.exit_code, 1) << missing.err;
    EXPECT_NE(missing.err.find("no site 4000000000"), std::string::npos) << missing.err;
    EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
}

// watch keeps only the focused sites in its series; the totals stay the whole process's.
TEST_F(Focus, WatchKeepsOnlyTheFocusedSitesInItsSeries) {
    const TemporaryDirectory directory;
    const std::string series = directory.path() / "series.jsonl";
    const Completed watch = run_report({"watch", pid(), "--count", "1", "--min-bytes", "0", "--out", series, "--focus",
                                        "Registry", "--focus", "strdup"});
    ASSERT_EQ(watch.exit_code, 0) << watch.err;
    std::ifstream in(series);
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    const nlohmann::json sample = nlohmann::json::parse(line);
    ASSERT_EQ(sample.at("sites").size(), 2u) << sample.dump(2);
    std::map<std::string, long long> live_by_label;
    for (const nlohmann::json& site : sample.at("sites"))
        live_by_label[site.at("label")] = site.at("live_bytes").get<long long>();
    // Labels name the innermost frame outside the runtimes, in full (a series is data).
    const auto labelled = [&](const std::string& start, long long live_bytes) {
        return std::any_of(live_by_label.begin(), live_by_label.end(), [&](const auto& entry) {
            return entry.first.starts_with(start) && entry.second == live_bytes;
        });
    };
    EXPECT_TRUE(labelled("leak_through_strdup() (focus_targets.cpp:", kStrdup.live_bytes)) << sample.dump(2);
    EXPECT_TRUE(labelled("focus_targets::Registry<std::map<", kRegistry.live_bytes)) << sample.dump(2);
    EXPECT_EQ(sample.at("totals").at("live_bytes"), json_with({}).at("totals").at("live_bytes"));
}

TEST_F(Focus, APatternThatIsNoRegularExpressionIsAUsageError) {
    const Completed bad = run_report({pid(), "--focus", "leak_(["});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("not a regular expression: leak_(["), std::string::npos) << bad.err;
    const Completed both = run_report({pid(), "--site", "1", "--focus", "x"});
    EXPECT_EQ(both.exit_code, 2) << both.err;
}

// --children --site: the row's share of each process of the tree.
TEST(FocusTree, SiteOfAMergedTreeSplitsTheRowByProcess) {
    using namespace ground_truth::fork_leak;
    Target parent({paths::program("fork_leak")}, Environment::profiled());
    const pid_t child = fork_leak_child_pid(parent.wait_ready());
    const nlohmann::json tree = report_json(parent.pid(), {"--children", "--focus", "^parent_site_alloc$"});
    ASSERT_EQ(tree.at("sites").size(), 1u) << tree.at("sites").dump(2);
    const std::string id = std::to_string(tree.at("sites")[0].at("id").get<uint64_t>());
    const Completed text = run_report({std::to_string(parent.pid()), "--children", "--site", id});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("    by process:\n"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("      pid " + std::to_string(parent.pid()) + ": " +
                            std::to_string(kParentBlocks * kParentBlockSize) + " B"),
              std::string::npos)
        << text.out;
    const std::size_t still_inherited = kParentBlocks - kInheritedFreedByChild;
    EXPECT_NE(text.out.find("      pid " + std::to_string(child) + ": " +
                            std::to_string(still_inherited * kParentBlockSize) + " B"),
              std::string::npos)
        << text.out;
    EXPECT_EQ(parent.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
