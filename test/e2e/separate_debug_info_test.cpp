// Symbols and lines from separate debug info, as distributions ship it: a copy of inline_leak
// stripped of everything but its dynamic symbols, whose debug info is in a file of its own,
// found through the copy's .gnu_debuglink beside it, or fetched by build-id from a debuginfod
// server (a local stand-in) when DEBUGINFOD_URLS names one, and never otherwise.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <stdexcept>

#include "ground_truth.h"
#include "harness.h"
#include "inline_leak_source.h"
#include "objcopy.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;
using namespace ground_truth::inline_leak;

// The program's debug info in `debug_file`, and a copy of the program at `program` without it
// and without its symbol table; with a .gnu_debuglink naming the debug file if asked.
void split_debug_info(const fs::path& program, const fs::path& debug_file, bool link) {
    const std::string built = paths::program("inline_leak");
    objcopy({"--only-keep-debug", built, debug_file.string()});
    std::vector<std::string> strip{"--strip-all"};
    if (link) strip.push_back("--add-gnu-debuglink=" + debug_file.string());
    strip.insert(strip.end(), {built, program.string()});
    objcopy(strip);
    fs::permissions(program, fs::perms::owner_all);
}

// The JSON report of `program` (a copy of inline_leak) run profiled, read with `environment`.
nlohmann::json report_of(const fs::path& program, const Environment& environment) {
    Target target({program.string()}, Environment::profiled());
    target.wait_ready();
    const Completed report =
        run({paths::report_tool, std::to_string(target.pid()), "--format", "json", "--top", "0"}, environment, {}, 60s);
    EXPECT_EQ(target.release_and_wait(), 0);
    if (report.exit_code != 0) throw std::runtime_error("leakwrap-report failed: " + report.err);
    return nlohmann::json::parse(report.out);
}

// The frames in the program of the row holding the nested site's blocks.
std::vector<nlohmann::json> nested_site_frames(const nlohmann::json& report, const fs::path& program) {
    for (const auto& site : report.at("sites")) {
        if (site.at("live_bytes") != kRequests * kNestedSize) continue;
        std::vector<nlohmann::json> frames;
        for (const auto& frame : site.at("frames"))
            if (frame.at("module") == program.string()) frames.push_back(frame);
        return frames;
    }
    throw std::runtime_error("no site holds the nested blocks: " + report.dump(1));
}

void expect_symbolized(const nlohmann::json& report, const fs::path& program) {
    const auto frames = nested_site_frames(report, program);
    const auto expected = inline_leak::nested_site().frames;
    ASSERT_GE(frames.size(), expected.size()) << report.dump(1);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(frames[i].at("function"), expected[i].function) << frames[i];
        EXPECT_EQ(frames[i].at("line"), expected[i].line) << frames[i];
        EXPECT_EQ(frames[i].value("inlined", false), expected[i].inlined) << frames[i];
    }
}

void expect_unsymbolized(const nlohmann::json& report, const fs::path& program) {
    const auto frames = nested_site_frames(report, program);
    ASSERT_FALSE(frames.empty()) << report.dump(1);
    for (const auto& frame : frames) {
        EXPECT_TRUE(frame.at("file").is_null()) << frame;
        EXPECT_FALSE(frame.value("inlined", false)) << frame;
    }
    // Without a symbol table, handle has no name: its frame is the module and offset.
    EXPECT_TRUE(frames[0].at("function").is_null()) << frames[0];
}

TEST(SeparateDebugInfo, FoundThroughTheGnuDebuglinkBesideTheProgram) {
    if (!have_objcopy()) GTEST_SKIP() << "no objcopy";
    TemporaryDirectory directory;
    const fs::path program = directory.path() / "inline_leak";
    // Not "inline_leak.debug", which would be tried without the link.
    const fs::path debug_file = directory.path() / "inline_leak.symbols";
    split_debug_info(program, debug_file, true);

    expect_symbolized(report_of(program, Environment::bare()), program);

    fs::remove(debug_file);
    expect_unsymbolized(report_of(program, Environment::bare()), program);
}

// A stand-in for a debuginfod server: Python's http.server answering
// GET /buildid/HEX/debuginfo from a directory, on a loopback port the kernel picks.
class DebuginfodServer {
public:
    explicit DebuginfodServer(const fs::path& root)
        : server_({paths::python3, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", root.string(), "0"},
                  Environment::bare()) {
        const std::string line = server_.wait_for_line("Serving HTTP");
        std::smatch port;
        if (!std::regex_search(line, port, std::regex(R"(port (\d+))")))
            throw std::runtime_error("no port in: " + line);
        url_ = "http://127.0.0.1:" + port[1].str();
    }

    const std::string& url() const { return url_; }

private:
    Target server_;  // killed when the test ends
    std::string url_;
};

TEST(SeparateDebugInfo, FetchedByBuildIdFromDebuginfodOnlyWhenDebuginfodUrlsIsSet) {
    if (!have_objcopy()) GTEST_SKIP() << "no objcopy";
    TemporaryDirectory directory;
    const fs::path program = directory.path() / "inline_leak";
    const fs::path served = directory.path() / "served";
    fs::create_directories(served);
    const fs::path debug_file = directory.path() / "inline_leak.symbols";
    split_debug_info(program, debug_file, false);
    const fs::path by_build_id = served / "buildid" / build_id_hex(program, directory.path());
    fs::create_directories(by_build_id);
    fs::rename(debug_file, by_build_id / "debuginfo");
    DebuginfodServer server(served);

    // The client's cache in the scratch directory: nothing left behind, nothing found from before.
    const auto environment = [&](const std::string& cache) {
        return Environment::bare().set("DEBUGINFOD_CACHE_PATH", (directory.path() / cache).string());
    };
    expect_unsymbolized(report_of(program, environment("cache-unset")), program);
    expect_symbolized(report_of(program, environment("cache-set").set("DEBUGINFOD_URLS", server.url())), program);
}

}  // namespace
}  // namespace leakwrap::e2e
