// glibc's frames (libc.so.6 and the dynamic loader) are named from the symbol table alone unless
// --libc-lines asks for their DWARF: on focus_targets' leak through libc's strdup, read by the
// real leakwrap-report, as a report (JSON and text) and as a watch series. Their file and line
// need libc's debug info (libc6-dbg); where it is missing that half skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "ground_truth.h"
#include "harness.h"
#include "objcopy.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;
using namespace ground_truth::focus_targets;

constexpr std::size_t kStrdupBytes = kStrdupCount * (kStrdupLength + 1);

std::string file_name(const nlohmann::json& path) {
    return path.is_string() ? fs::path(path.get<std::string>()).filename().string() : "";
}

// The C library, or the dynamic loader (ld-linux-x86-64.so.2 and its kin on other machines).
bool in_glibc(const nlohmann::json& frame) {
    const std::string module = file_name(frame.at("module"));
    return module == "libc.so.6" || module.starts_with("ld-linux");
}

// The frames of the row holding the strdup leak: strdup's own (libc's), leak_through_strdup,
// main, then the program's start, __libc_start_call_main and __libc_start_main among them.
nlohmann::json strdup_row_frames(const nlohmann::json& report) {
    for (const nlohmann::json& site : report.at("sites"))
        if (site.at("live_bytes") == kStrdupBytes && site.at("live_blocks") == kStrdupCount) return site.at("frames");
    throw std::runtime_error("no row holds the strdup leak: " + report.dump(1));
}

// A frame's line, 0 when it has none.
long line_of(const nlohmann::json& frame) { return frame.at("line").is_number() ? frame.at("line").get<long>() : 0; }

const nlohmann::json& frame_of(const nlohmann::json& frames, const std::string& function) {
    for (const nlohmann::json& frame : frames)
        if (frame.at("function") == function) return frame;
    throw std::runtime_error("no frame of " + function + " in " + frames.dump(1));
}

// Whether a report has a frame of glibc marked inlined anywhere.
bool has_inlined_glibc_frame(const nlohmann::json& report) {
    for (const nlohmann::json& site : report.at("sites"))
        for (const nlohmann::json& frame : site.at("frames"))
            if (in_glibc(frame) && frame.value("inlined", false)) return true;
    return false;
}

// The frames outside glibc, which every option must leave as they are.
nlohmann::json frames_outside_glibc(const nlohmann::json& frames) {
    nlohmann::json kept = nlohmann::json::array();
    for (const nlohmann::json& frame : frames)
        if (!in_glibc(frame)) kept.push_back(frame);
    return kept;
}

class LibcFrames : public ::testing::Test {
protected:
    void SetUp() override { target_.wait_ready(); }
    void TearDown() override { EXPECT_EQ(target_.release_and_wait(), 0); }

    std::string pid() const { return std::to_string(target_.pid()); }

    // Where libc6-dbg puts libc's debug file, if it is there; `libc` as the report names it.
    std::optional<fs::path> libc_debug_file(const std::string& libc) const {
        if (!have_objcopy()) return std::nullopt;
        const std::string id = build_id_hex(libc, scratch_.path());
        const fs::path debug_file = fs::path("/usr/lib/debug/.build-id") / id.substr(0, 2) / (id.substr(2) + ".debug");
        return fs::is_regular_file(debug_file) ? std::optional(debug_file) : std::nullopt;
    }

    // The stack key that one watch sample of every site keeps for the strdup leak.
    std::string watched_strdup_stack(const std::vector<std::string>& more_arguments) const {
        const fs::path series = scratch_.path() / "series.jsonl";
        std::vector<std::string> arguments{"watch",       pid(), "--count", "1",
                                           "--min-bytes", "0",   "--out",   series.string()};
        arguments.insert(arguments.end(), more_arguments.begin(), more_arguments.end());
        const Completed watch = run_report(arguments);
        EXPECT_EQ(watch.exit_code, 0) << watch.err;
        std::ifstream in(series);
        std::string line;
        std::getline(in, line);
        const nlohmann::json sample = nlohmann::json::parse(line);
        for (const nlohmann::json& site : sample.at("sites"))
            if (site.at("live_bytes") == kStrdupBytes) return site.at("stack").get<std::string>();
        throw std::runtime_error("no site of the series holds the strdup leak: " + line);
    }

    Target target_{{paths::program("focus_targets")}, Environment::profiled()};
    TemporaryDirectory scratch_;
};

TEST_F(LibcFrames, AreNamedWithoutFileLineOrInlinedFunctionsByDefault) {
    const nlohmann::json report = report_json(target_.pid());
    const nlohmann::json frames = strdup_row_frames(report);
    ASSERT_GE(frames.size(), 3u) << frames.dump(1);
    const nlohmann::json& strdup = frames[0];
    EXPECT_EQ(file_name(strdup.at("module")), "libc.so.6") << strdup;
    ASSERT_TRUE(strdup.at("function").is_string()) << strdup;
    EXPECT_TRUE(strdup.at("function").get<std::string>().ends_with("strdup")) << strdup;
    EXPECT_TRUE(strdup.at("file").is_null()) << strdup;
    EXPECT_TRUE(strdup.at("line").is_null()) << strdup;
    // The program's own frames keep their lines.
    EXPECT_EQ(frames[1].at("function"), "leak_through_strdup()");
    EXPECT_EQ(file_name(frames[1].at("file")), "focus_targets.cpp") << frames[1];
    EXPECT_GT(line_of(frames[1]), 0) << frames[1];

    for (const nlohmann::json& site : report.at("sites"))
        for (const nlohmann::json& frame : site.at("frames"))
            if (in_glibc(frame)) {
                EXPECT_TRUE(frame.at("file").is_null()) << frame;
            }
    EXPECT_FALSE(has_inlined_glibc_frame(report));
    EXPECT_EQ(watched_strdup_stack({}).find("strdup.c"), std::string::npos);

    // libc exports no __libc_start_call_main: only the debug file's full symbol table names it,
    // and it still does without its DWARF.
    if (libc_debug_file(strdup.at("module"))) {
        EXPECT_TRUE(frame_of(frames, "__libc_start_call_main").at("file").is_null());
    }
}

TEST_F(LibcFrames, GetTheirFileLineAndInlinedFunctionsWithLibcLines) {
    const nlohmann::json plain = report_json(target_.pid());
    const nlohmann::json plain_frames = strdup_row_frames(plain);
    const std::string libc = plain_frames[0].at("module");
    if (!have_objcopy()) GTEST_SKIP() << "no objcopy to read libc's build-id with";
    if (!libc_debug_file(libc))
        GTEST_SKIP() << "no debug file of " << libc << " under /usr/lib/debug/.build-id "
                     << "(apt-get install libc6-dbg)";

    const nlohmann::json report = report_json(target_.pid(), {"--libc-lines"});
    const nlohmann::json frames = strdup_row_frames(report);
    ASSERT_GE(frames.size(), 3u) << frames.dump(1);
    EXPECT_EQ(file_name(frames[0].at("file")), "strdup.c") << frames[0];
    EXPECT_GT(line_of(frames[0]), 0) << frames[0];
    const nlohmann::json& start = frame_of(frames, "__libc_start_call_main");
    EXPECT_EQ(file_name(start.at("file")), "libc_start_call_main.h") << start;
    EXPECT_GT(line_of(start), 0) << start;
    EXPECT_EQ(frames_outside_glibc(frames), frames_outside_glibc(plain_frames));
    // The stdout buffer that the handshake's fputs has libc allocate comes through code glibc
    // inlined (_IO_doallocbuf, _IO_file_xsputn on Debian 12's).
    EXPECT_TRUE(has_inlined_glibc_frame(report)) << report.dump(1);

    const Completed text = run_report({pid(), "--libc-lines"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("strdup.c:"), std::string::npos) << text.out;
    EXPECT_NE(watched_strdup_stack({"--libc-lines"}).find("strdup.c:"), std::string::npos);
}

}  // namespace
}  // namespace leakwrap::e2e
