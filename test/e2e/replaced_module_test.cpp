// A report never waits on a file. It reads symbols from the module paths the segment recorded,
// and since the process loaded a module, anyone who can write its directory may have put a FIFO
// in place of the module or of its separate debug file; open() of a FIFO waits forever for a
// writer. The report must finish all the same, leaving what it cannot read unsymbolized.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"
#include "objcopy.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

// Where a test copies torture_plugin, in a directory of its own.
fs::path plugin_in(const TemporaryDirectory& directory) { return directory.path() / "libtorture_plugin.so"; }

void make_fifo(const fs::path& path) {
    if (mkfifo(path.c_str(), 0600) != 0)
        throw std::runtime_error("mkfifo " + path.string() + ": " + std::strerror(errno));
}

// `leakwrap-report <pid> arguments...`; one that has not finished within 20 s is killed and
// the test fails.
Completed report_in_time(pid_t pid, const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{paths::report_tool, std::to_string(pid)};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return run(argv, Environment::bare(), {}, 20s);
}

// The innermost frame of every row plugin_leak's texts were allocated in, and their live blocks.
struct PluginRows {
    std::vector<nlohmann::json> innermost_frames;
    long long live_blocks = 0;
};

PluginRows rows_allocating_in(const nlohmann::json& report, const fs::path& plugin) {
    PluginRows rows;
    for (const auto& site : report.at("sites")) {
        const auto& frames = site.at("frames");
        if (frames.empty() || frames[0].at("module") != plugin.string()) continue;
        rows.innermost_frames.push_back(frames[0]);
        rows.live_blocks += site.at("live_blocks").get<long long>();
    }
    return rows;
}

TEST(ReplacedModule, FifoInPlaceOfALoadedLibraryLeavesItsFramesUnsymbolized) {
    TemporaryDirectory directory;
    fs::copy_file(paths::program("libtorture_plugin.so"), plugin_in(directory));
    Target target({paths::program("plugin_leak"), plugin_in(directory).string()}, Environment::profiled());
    target.wait_ready();
    fs::remove(plugin_in(directory));
    make_fifo(plugin_in(directory));

    const Completed text = report_in_time(target.pid(), {"--top", "0"});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("?? (libtorture_plugin.so+0x"), std::string::npos) << text.out;

    const Completed json = report_in_time(target.pid(), {"--format", "json", "--top", "0"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const PluginRows rows = rows_allocating_in(nlohmann::json::parse(json.out), plugin_in(directory));
    EXPECT_EQ(rows.live_blocks, ground_truth::plugin_leak::kTexts);
    for (const auto& frame : rows.innermost_frames) {
        EXPECT_TRUE(frame.at("function").is_null()) << frame;
        EXPECT_TRUE(frame.contains("module_offset")) << frame;
        EXPECT_NE(frame.value("note", "").find("not a regular file"), std::string::npos) << frame;
    }
    EXPECT_EQ(target.release_and_wait(), 0);
}

// elfutils looks for a separate debug file beside the module, then in its .debug directory.
// A FIFO at the first place is passed over; the debug file at the second still gives lines.
TEST(ReplacedModule, FifoWhereASeparateDebugFileCouldBeIsPassedOver) {
    if (!have_objcopy()) GTEST_SKIP() << "no objcopy";
    TemporaryDirectory directory;
    const std::string built = paths::program("libtorture_plugin.so");
    const std::string debug_name = plugin_in(directory).filename().string() + ".debug";
    fs::create_directory(directory.path() / ".debug");
    objcopy({"--only-keep-debug", built, (directory.path() / ".debug" / debug_name).string()});
    objcopy({"--strip-debug", built, plugin_in(directory).string()});
    make_fifo(directory.path() / debug_name);
    Target target({paths::program("plugin_leak"), plugin_in(directory).string()}, Environment::profiled());
    target.wait_ready();

    const Completed json = report_in_time(target.pid(), {"--format", "json", "--top", "0"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const PluginRows rows = rows_allocating_in(nlohmann::json::parse(json.out), plugin_in(directory));
    EXPECT_EQ(rows.live_blocks, ground_truth::plugin_leak::kTexts);
    ASSERT_FALSE(rows.innermost_frames.empty());
    for (const auto& frame : rows.innermost_frames) {
        EXPECT_EQ(frame.at("function"), "plugin_describe") << frame;
        EXPECT_TRUE(frame.at("file").is_string() && frame.at("file").get<std::string>().ends_with("torture_plugin.cpp"))
            << frame;
    }
    EXPECT_EQ(target.release_and_wait(), 0);
}

}  // namespace
}  // namespace leakwrap::e2e
