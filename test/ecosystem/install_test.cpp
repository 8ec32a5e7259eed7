// What `cmake --install` gives users works from where it lands: the launcher preloads the
// installed library and names the pid, the installed reader reads what it profiled, and other
// builds find both through pkg-config and find_package(leakwrap).
#include <gtest/gtest.h>

#include <leakwrap/segment_layout.h>

#include <filesystem>
#include <sstream>

#include "harness.h"
#include "installed_tree.h"
#include "ground_truth.h"

namespace leakwrap::ecosystem {
namespace {

namespace fs = std::filesystem;
using ground_truth::alloc_kinds::kMallocCount;
using ground_truth::alloc_kinds::kMallocFreed;
using ground_truth::alloc_kinds::kMallocSize;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

class Installed : public ::testing::Test {
protected:
    InstalledTree installed;
};

TEST_F(Installed, LauncherPreloadsTheInstalledLibraryFirstAndNamesThePid) {
    // The command prints its own pid and LD_PRELOAD; exec keeps the launcher's pid.
    const e2e::Completed launched =
        e2e::run({installed.bin("leakwrap"), "--", "sh", "-c", "echo $$; echo \"$LD_PRELOAD\""},
                 e2e::Environment::bare().set("LD_PRELOAD", "libm.so.6"));
    ASSERT_EQ(launched.exit_code, 0) << launched.err;
    const auto lines = lines_of(launched.out);
    ASSERT_EQ(lines.size(), 2u) << launched.out;
    EXPECT_EQ(lines[1], fs::canonical(installed.lib("libleakwrap.so")).string() + ":libm.so.6");
    EXPECT_NE(launched.err.find("leakwrap-report " + lines[0] + "\n"), std::string::npos) << launched.err;
}

TEST_F(Installed, LauncherOptionsBecomeTheLibrarySettings) {
    // Shell builtins only: a child would inherit LEAKWRAP_KEEP=1 and leave a segment behind.
    const e2e::Completed launched =
        e2e::run({installed.bin("leakwrap"), "--keep", "--depth", "8", "--ruby-depth", "3", "--sample", "0",
                  "--max-sites", "1000", "--", "sh", "-c",
                  "echo $$; echo \"$LEAKWRAP_KEEP $LEAKWRAP_DEPTH $LEAKWRAP_RUBY_DEPTH $LEAKWRAP_SAMPLE "
                  "$LEAKWRAP_MAX_SITES ${LEAKWRAP_DISABLE-unset}\""},
                 e2e::Environment::bare().set("LEAKWRAP_DISABLE", "1"));
    ASSERT_EQ(launched.exit_code, 0) << launched.err;
    const auto lines = lines_of(launched.out);
    ASSERT_EQ(lines.size(), 2u) << launched.out;
    const pid_t pid = std::stoi(lines[0]);
    EXPECT_EQ(lines[1], "1 8 3 0 1000 unset");
    // LEAKWRAP_KEEP=1 kept the shell's segment. Its library behaviour is the lifecycle tests'
    // concern (which also --clean such segments at any time, so this test must not count on it).
    std::filesystem::remove(e2e::segment_path(pid));
}

TEST_F(Installed, LauncherTakesSampleSizesWithBinaryUnits) {
    for (const auto& [given, bytes] : std::vector<std::pair<std::string, std::string>>{
             {"512KiB", "524288"}, {"1k", "1024"}, {"2M", "2097152"}, {"1GiB", "1073741824"}, {"4096", "4096"}}) {
        const e2e::Completed launched =
            e2e::run({installed.bin("leakwrap"), "--sample", given, "--", "sh", "-c", "echo \"$LEAKWRAP_SAMPLE\""},
                     e2e::Environment::bare());
        ASSERT_EQ(launched.exit_code, 0) << given << ": " << launched.err;
        EXPECT_EQ(launched.out, bytes + "\n") << given;
    }
}

// A command that is not there is named, with the shell's status, and never announced as profiled.
TEST_F(Installed, LauncherSaysACommandWasNotFoundWithoutABanner) {
    for (const auto& [command, status] : std::vector<std::pair<std::string, int>>{
             {"/nonexistent/program", 127}, {"leakwrap-no-such-command", 127}, {"/", 126}}) {
        const e2e::Completed launched = e2e::run({installed.bin("leakwrap"), "--", command}, e2e::Environment::bare());
        EXPECT_EQ(launched.exit_code, status) << command;
        EXPECT_EQ(launched.err.find("profiling"), std::string::npos) << launched.err;
        EXPECT_NE(launched.err.find(command + ": "), std::string::npos) << launched.err;
        EXPECT_EQ(lines_of(launched.err).size(), 1u) << launched.err;
    }
}

TEST_F(Installed, LauncherSuggestsTheOptionATypoMeant) {
    const e2e::Completed launched =
        e2e::run({installed.bin("leakwrap"), "--dpeth", "8", "--", "true"}, e2e::Environment::bare());
    EXPECT_EQ(launched.exit_code, 2);
    EXPECT_EQ(launched.err, "leakwrap: error: unknown option --dpeth; did you mean --depth? (see --help)\n");
}

TEST_F(Installed, InstalledReportReadsAProgramStartedByTheLauncher) {
    e2e::Target target({installed.bin("leakwrap"), "--", e2e::paths::program("alloc_kinds")}, e2e::Environment::bare());
    target.wait_ready();
    const e2e::Completed report =
        e2e::run({installed.bin("leakwrap-report"), std::to_string(target.pid()), "--format", "json", "--top", "0"},
                 e2e::Environment::bare());
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const auto leak = e2e::sites_calling(nlohmann::json::parse(report.out), "leak_malloc", 1);
    EXPECT_EQ(leak.counters.live_bytes, static_cast<long long>((kMallocCount - kMallocFreed) * kMallocSize));
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST_F(Installed, LauncherRefusesAMissingCommandUnknownOptionsAndBadValues) {
    for (const auto& arguments : std::vector<std::vector<std::string>>{
             {},
             {"--depth"},
             {"--bogus", "--", "true"},
             {"--keep", "--"},
             // Values the library would only warn about, running unprofiled as asked otherwise.
             {"--depth", "0", "true"},
             {"--depth", "65", "true"},
             {"--depth", "8x", "true"},
             {"--ruby-depth", "65", "true"},
             {"--sample", "-1", "true"},
             {"--sample", "1.5k", "true"},
             {"--sample", "2TiB", "true"},
             {"--sample", "KiB", "true"},
             {"--max-sites", "88", "true"},
             {"--max-sites", "67108865", "true"}}) {
        std::vector<std::string> argv{installed.bin("leakwrap")};
        argv.insert(argv.end(), arguments.begin(), arguments.end());
        const e2e::Completed launched = e2e::run(argv, e2e::Environment::bare());
        EXPECT_EQ(launched.exit_code, 2) << ::testing::PrintToString(arguments);
        EXPECT_EQ(lines_of(launched.err).size(), 1u) << launched.err;
    }
}

TEST_F(Installed, PkgConfigNamesTheLibraryAndTheLayoutHeader) {
    const auto environment = e2e::Environment::bare().set("PKG_CONFIG_PATH", installed.lib("pkgconfig").string());
    const e2e::Completed library =
        e2e::run({LEAKWRAP_PKG_CONFIG, "--variable=preload_library", "leakwrap"}, environment);
    ASSERT_EQ(library.exit_code, 0) << library.err;
    EXPECT_EQ(fs::canonical(lines_of(library.out).at(0)), fs::canonical(installed.lib("libleakwrap.so")));

    const e2e::Completed cflags = e2e::run({LEAKWRAP_PKG_CONFIG, "--cflags", "leakwrap"}, environment);
    ASSERT_EQ(cflags.exit_code, 0) << cflags.err;
    std::string include_flag;
    std::istringstream(cflags.out) >> include_flag;
    ASSERT_TRUE(include_flag.starts_with("-I")) << cflags.out;
    const fs::path include = include_flag.substr(2);
    EXPECT_TRUE(fs::exists(include / "leakwrap/segment_layout.h")) << include;
}

TEST_F(Installed, FindPackageGivesTheLayoutHeaderAndTheLibraryToPreload) {
    TemporaryDirectory build;
    const auto environment = e2e::Environment::bare();
    const e2e::Completed configure = e2e::run(
        {LEAKWRAP_CMAKE_COMMAND, "-S", LEAKWRAP_SOURCE_DIR "/test/ecosystem/consumer", "-B", build.path().string(),
         "-DCMAKE_PREFIX_PATH=" + installed.prefix().string(), "-DCMAKE_CXX_COMPILER=" + e2e::paths::cxx_compiler},
        environment);
    ASSERT_EQ(configure.exit_code, 0) << configure.out << configure.err;
    const e2e::Completed compile = e2e::run({LEAKWRAP_CMAKE_COMMAND, "--build", build.path().string()}, environment);
    ASSERT_EQ(compile.exit_code, 0) << compile.out << compile.err;

    const e2e::Completed consumer = e2e::run({(build.path() / "consumer").string()}, environment);
    ASSERT_EQ(consumer.exit_code, 0) << consumer.err;
    const auto lines = lines_of(consumer.out);
    ASSERT_EQ(lines.size(), 3u) << consumer.out;
    EXPECT_EQ(lines[0], std::to_string(layout::kLayoutVersion));
    EXPECT_EQ(fs::canonical(lines[1]), fs::canonical(installed.lib("libleakwrap.so")));
    EXPECT_EQ(lines[2], lines[1]);
}

}  // namespace
}  // namespace leakwrap::ecosystem
