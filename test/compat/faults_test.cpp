// Faults and limits of the preload never break the program it runs in: garbage settings, a full
// site table, a /dev/shm where no segment can be made, names in /dev/shm planted by someone else.
// Each costs exactly one warning line on stderr and nothing else.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <leakwrap/segment_layout.h>
#include <set>
#include <string>
#include <vector>

#include "dead_segments.h"
#include "ground_truth.h"
#include "harness.h"
#include "one_warning.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

void expect_one_warning_naming(const std::string& variable, const std::string& value) {
    const std::string warning =
        expect_same_output_and_one_warning({paths::program("semantics")}, Environment::profiled().set(variable, value));
    EXPECT_NE(warning.find(variable + "=" + value), std::string::npos) << warning;
}

TEST(Faults, UnparsableDepthWarnsOnceAndKeepsTheDefault) {
    expect_one_warning_naming("LEAKWRAP_DEPTH", "abc");
    Target target({paths::program("alloc_kinds")}, Environment::profiled().set("LEAKWRAP_DEPTH", "abc"));
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    // leak_malloc, main, and libc's start: a depth of 1 or 0 would keep fewer.
    for (const auto& site : report.at("sites")) {
        if (site.at("frames").size() > 0 && site.at("frames")[0].at("function") == "leak_malloc") {
            EXPECT_GE(site.at("frames").size(), 3u);
        }
    }
    EXPECT_EQ(sites_calling(report, "leak_malloc", 1).sites, 1u);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Faults, NegativeSiteCapacityWarnsOnceAndKeepsTheDefault) {
    expect_one_warning_naming("LEAKWRAP_MAX_SITES", "-5");
    Target target({paths::program("many_sites")}, Environment::profiled().set("LEAKWRAP_MAX_SITES", "-5"));
    target.wait_ready();
    const nlohmann::json report = report_json(target.pid());
    EXPECT_EQ(sites_calling_function_containing(report, "many_sites_leak<", 1).sites, ground_truth::many_sites::kSites);
    EXPECT_EQ(report.at("totals").at("lost_sites").get<long long>(), 0);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Faults, UnparsableKeepWarnsOnceAndRemovesTheSegmentAtExit) {
    expect_one_warning_naming("LEAKWRAP_KEEP", "yes");
    Target target({paths::program("alloc_kinds")}, Environment::profiled().set("LEAKWRAP_KEEP", "yes"));
    target.wait_ready();
    const pid_t pid = target.pid();
    EXPECT_TRUE(segment_exists(pid));
    EXPECT_EQ(target.release_and_wait(), 0);
    EXPECT_FALSE(segment_exists(pid));
}

// A table that fills says so twice, once per step: new stacks are first recorded by their
// innermost frames only, and once even those find no room, counted in the overflow sites.
TEST(Faults, FullSiteTableWarnsOncePerStep) {
    const std::string capacity = std::to_string(layout::kMinSiteCapacity + 8);
    const std::vector<std::string> argv{paths::program("many_sites")};
    const Completed bare = run(argv, Environment::bare());
    const Completed with = run(argv, Environment::profiled().set("LEAKWRAP_MAX_SITES", capacity));
    EXPECT_EQ(with.exit_code, bare.exit_code) << with.err;
    EXPECT_EQ(with.out, bare.out);
    const std::vector<std::string> warnings = lines_of(with.err);
    ASSERT_EQ(warnings.size(), 2u) << with.err;
    EXPECT_NE(warnings[0].find("nearly full"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("innermost frames"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[1].find("site table full"), std::string::npos) << warnings[1];
    EXPECT_NE(warnings[1].find("LEAKWRAP_MAX_SITES"), std::string::npos) << warnings[1];
}

// `sh -c script` in a private mount and pid namespace, its $0 "sh" and `arguments` after.
std::vector<std::string> in_private_namespaces(const std::string& script, const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"unshare", "--mount", "--pid", "--fork", "--mount-proc",
                                  "/bin/sh", "-c",      script,  "sh"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return argv;
}

// A private mount namespace with its own /dev/shm, made by `mount_options`; only `program` runs
// under the preload (the shell and mount would create segments on the real /dev/shm first).
std::vector<std::string> in_private_dev_shm(const std::string& mount_options, const std::string& script, bool profiled,
                                            const std::string& program) {
    return in_private_namespaces(
        "set -e; mount -t tmpfs -o " + mount_options + " tmpfs /dev/shm; " + script,
        {profiled ? "LD_PRELOAD=" + paths::preload_library : "LEAKWRAP_UNPROFILED=1", paths::program(program)});
}

bool can_make_namespaces() {
    return run({"unshare", "--mount", "--pid", "--fork", "/bin/true"}, Environment::bare()).exit_code == 0;
}

// `script` runs the program as `env "$1" "$2"`, profiled or not, and may print what it checks.
std::string expect_one_warning_in_private_dev_shm(const std::string& mount_options, const std::string& script,
                                                  const std::string& program = "semantics") {
    const Completed bare = run(in_private_dev_shm(mount_options, script, false, program), Environment::bare());
    EXPECT_EQ(bare.exit_code, 0) << bare.err;
    EXPECT_NE(bare.out, "");
    const Completed with = run(in_private_dev_shm(mount_options, script, true, program), Environment::bare());
    EXPECT_EQ(with.exit_code, bare.exit_code) << with.err;
    EXPECT_EQ(with.out, bare.out);
    const std::vector<std::string> warnings = lines_of(with.err);
    EXPECT_EQ(bare.err, "");
    EXPECT_EQ(warnings.size(), 1u) << with.err;
    return warnings.empty() ? std::string() : warnings.front();
}

TEST(Faults, ReadOnlyDevShmWarnsOnceAndTheProgramRunsUnprofiled) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm("ro", "env \"$1\" \"$2\"");
    EXPECT_NE(warning.find("cannot create"), std::string::npos) << warning;
}

TEST(Faults, DevShmWithoutRoomForASegmentWarnsOnceAndTheProgramRunsUnprofiled) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm("size=4k", "env \"$1\" \"$2\"; ls /dev/shm");
    EXPECT_NE(warning.find("no space"), std::string::npos) << warning;
}

// 112 KiB hold what a segment backs at creation (its header, the shared shard of the bins and
// site deltas, the first chunks of the site, module and string tables), not the chunks of site
// slots that many_sites' 256 sites need: /dev/shm fills up while the program runs. The warning
// must say so, not blame the site table.
TEST(Faults, DevShmFillingUpWhileTheProgramRunsWarnsOnceThatItIsFull) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=112k", "env \"$1\" \"$2\" < /dev/null; ls /dev/shm | wc -l", "many_sites");
    EXPECT_NE(warning.find("/dev/shm is full"), std::string::npos) << warning;
    EXPECT_EQ(warning.find("site table full"), std::string::npos) << warning;
}

// `body` run by sh in a private mount and pid namespace over a fresh tmpfs of `size` on
// /dev/shm, with $P the preload library, $PROGRAM `program`, $d `directory` and `more` as $4, ...
// Its function `start N` runs $PROGRAM profiled ($EXTRA_ENVIRONMENT added) with FIFOs in $d as
// stdin and stdout until it says READY; then its pid is in $pid and fds 3 and 4 are on it.
Completed run_in_private_dev_shm(const std::string& size, const std::string& body, const std::string& program,
                                 const fs::path& directory, const std::vector<std::string>& more = {}) {
    const std::string script =
        "set -e; mount -t tmpfs -o size=" + size +
        " tmpfs /dev/shm; P=\"$1\"; PROGRAM=\"$2\"; d=\"$3\"; "
        "start() { mkfifo \"$d/in$1\" \"$d/out$1\"; "
        "  env $EXTRA_ENVIRONMENT LD_PRELOAD=\"$P\" \"$PROGRAM\" < \"$d/in$1\" > \"$d/out$1\" & pid=$!; "
        "  exec 3> \"$d/in$1\" 4< \"$d/out$1\"; read ready <&4; }; " +
        body;
    std::vector<std::string> arguments{paths::preload_library, paths::program(program), directory.string()};
    arguments.insert(arguments.end(), more.begin(), more.end());
    const std::vector<std::string> argv = in_private_namespaces(script, arguments);
    return run(argv, Environment::bare());
}

// The same full /dev/shm: the writer has claimed site slots it could not back (holes in the
// sparse file), and the reader must read the segment all the same, live and after the exit,
// exactly as far as the totals go (every one of many_sites' blocks, in a site or an overflow site).
TEST(Faults, SegmentOfAProgramThatFilledDevShmIsReadLiveAndAfterExit) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    // The FIFOs are outside the full tmpfs: READY is read, both reports run, then the release
    // line lets the program exit.
    const TemporaryDirectory scratch;
    const Completed shell = run_in_private_dev_shm(
        "112k",
        "EXTRA_ENVIRONMENT=LEAKWRAP_KEEP=1 start 1; "
        "\"$4\" \"$pid\" --format json --top 0 > \"$d/live.json\"; \"$4\" \"$pid\" --top 1 > \"$d/live.txt\"; "
        "echo release >&3; wait \"$pid\"; "
        "\"$4\" --segment \"/dev/shm/leakwrap.$pid\" --format json --top 0 > \"$d/exited.json\"",
        "many_sites", scratch.path(), {paths::report_tool});
    ASSERT_EQ(shell.exit_code, 0) << shell.err;
    EXPECT_NE(shell.err.find("/dev/shm is full"), std::string::npos) << shell.err;
    const auto kSites = static_cast<long long>(ground_truth::many_sites::kSites);
    const uint32_t block_class = layout::size_class_of(ground_truth::many_sites::kBlockSize);
    for (const char* name : {"live.json", "exited.json"}) {
        std::ifstream file(scratch.path() / name);
        const nlohmann::json report = nlohmann::json::parse(file);
        EXPECT_EQ(report.at("state"), std::string(name) == "live.json" ? "alive" : "exited");
        long long overflowed = 0;
        if (const nlohmann::json* overflow = overflow_site(report))
            for (const auto& entry : overflow->at("size_classes"))
                if (entry.at("class").get<uint32_t>() == block_class)
                    overflowed = entry.at("live_blocks").get<long long>();
        EXPECT_GT(overflowed, 0) << name << ": /dev/shm did not fill up";
        EXPECT_EQ(sites_calling_function_containing(report, "many_sites_leak<", 1).counters.live_blocks + overflowed,
                  kSites)
            << name;
        EXPECT_GE(report.at("totals").at("live_blocks").get<long long>(), kSites) << name;
        // The loss is /dev/shm's, not the site table's, and the report says so.
        EXPECT_EQ(report.at("totals").at("lost_sites_because"), "dev_shm_full") << name;
    }
    std::ifstream text_file(scratch.path() / "live.txt");
    const std::string text{std::istreambuf_iterator<char>(text_file), std::istreambuf_iterator<char>()};
    EXPECT_NE(text.find("\nwarning: /dev/shm was full: "), std::string::npos) << text;
    EXPECT_EQ(text.find("site table overflowed"), std::string::npos) << text;
    EXPECT_EQ(text.find("LEAKWRAP_MAX_SITES to see"), std::string::npos) << text;
    EXPECT_NE(text.find("overflow site (allocations from stacks that found no room in /dev/shm)"), std::string::npos)
        << text;
}

std::set<std::string> words_of(const fs::path& file) {
    std::ifstream in(file);
    std::set<std::string> words;
    for (std::string word; in >> word;) words.insert(word);
    return words;
}

// For run_in_private_dev_shm: `count` profiled programs stopped with SIGTERM, one after another,
// leave their segments, the first made to look `count` minutes old and each next a minute
// younger; their pids are in $d/killed, in that order.
std::string leave_dead_segments(int count) {
    const std::string n = std::to_string(count);
    return "i=1; while [ $i -le " + n +
           " ]; do "
           "  start $i; kill -TERM $pid; wait $pid 2> /dev/null || true; exec 3>&- 4<&-; "
           "  echo $pid >> \"$d/killed\"; touch -m -d \"$((" +
           n +
           " + 1 - i)) minutes ago\" /dev/shm/leakwrap.$pid; "
           "  i=$((i + 1)); done; ";
}

// Six profiled programs stopped with SIGTERM leave their segments; the first is made to look ten
// days old, the second is handed to another user. A seventh still runs. Then two profiled
// programs start, the first keeping 8 dead segments, the second 3. Private /dev/shm and pid
// namespace: the trimming must not meet anyone else's segments, nor this test theirs.
TEST(Faults, SegmentsOfKilledProcessesAreTrimmedToTheNewestWhenAProfiledProgramStarts) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const TemporaryDirectory scratch;
    const fs::path& directory = scratch.path();
    // The seventh starts before the first segment is aged, which its own trimming would remove.
    const Completed shell = run_in_private_dev_shm(
        "64m",
        leave_dead_segments(6) +
            "start 7; echo $pid > \"$d/alive\"; "
            "touch -m -d '10 days ago' /dev/shm/leakwrap.$(sed -n 1p \"$d/killed\"); "
            "chown 65534 /dev/shm/leakwrap.$(sed -n 2p \"$d/killed\"); "
            "mkfifo /dev/shm/leakwrap.424242; ln -s leakwrap.$(sed -n 3p \"$d/killed\") /dev/shm/leakwrap.434343; "
            "ls /dev/shm > \"$d/before\"; "
            "LEAKWRAP_KEEP_DEAD=8 LD_PRELOAD=\"$P\" /bin/true; ls /dev/shm > \"$d/keep8\"; "
            "LEAKWRAP_KEEP_DEAD=3 LD_PRELOAD=\"$P\" /bin/true; ls /dev/shm > \"$d/keep3\"; "
            "echo release >&3; wait $pid",
        "alloc_kinds", directory);
    ASSERT_EQ(shell.exit_code, 0) << shell.err;
    EXPECT_EQ(shell.err, "");
    std::vector<std::string> killed;
    std::ifstream killed_pids(directory / "killed");
    for (std::string pid; killed_pids >> pid;) killed.push_back("leakwrap." + pid);
    ASSERT_EQ(killed.size(), 6u);
    const std::string alive = "leakwrap." + *words_of(directory / "alive").begin();
    const std::set<std::string> planted = {"leakwrap.424242", "leakwrap.434343"};
    std::set<std::string> everything(killed.begin(), killed.end());
    everything.insert(alive);
    everything.insert(planted.begin(), planted.end());
    EXPECT_EQ(words_of(directory / "before"), everything);

    // Eight may stay: only the ten-day-old one goes.
    std::set<std::string> expected = everything;
    expected.erase(killed[0]);
    EXPECT_EQ(words_of(directory / "keep8"), expected);
    // Three may stay: the newest three of this user's; the other user's, the live one and the
    // planted names stay too.
    expected.erase(killed[2]);
    EXPECT_EQ(words_of(directory / "keep3"), expected);
}

// 20,000 files planted under segment names bound what a profiled start does with /dev/shm: it
// opens at most LEAKWRAP_KEEP_DEAD + kSegmentsOpenedBeyondKept of them (counted by strace; before
// the bound it opened every one), and since it has not seen every dead segment it removes none of
// this user's for their number. Once the flood is gone, a start trims them to the newest again.
TEST(Faults, AFloodPlantedInDevShmBoundsTheStartAndLosesNoSegment) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const TemporaryDirectory scratch;
    const fs::path& directory = scratch.path();
    const Completed shell = run_in_private_dev_shm(
        "256m",
        leave_dead_segments(5) +
            "seq 1000000 1019999 | sed 's|^|/dev/shm/leakwrap.|' | xargs touch; "
            "LEAKWRAP_KEEP_DEAD=2 strace -f -qq -e trace=openat -o \"$d/opens\" env LD_PRELOAD=\"$P\" /bin/true; "
            "ls /dev/shm | grep -c . > \"$d/flooded\"; "
            "find /dev/shm -name 'leakwrap.10[0-9][0-9][0-9][0-9][0-9]' -delete; "
            "LEAKWRAP_KEEP_DEAD=2 LD_PRELOAD=\"$P\" /bin/true; ls /dev/shm | grep -c . > \"$d/trimmed\"",
        "alloc_kinds", directory);
    ASSERT_EQ(shell.exit_code, 0) << shell.err;
    std::ifstream opens(directory / "opens");
    std::size_t opened = 0;
    for (std::string line; std::getline(opens, line);) opened += line.find("\"leakwrap.") != std::string::npos;
    EXPECT_GT(opened, 0u);
    EXPECT_LE(opened, 2 + kSegmentsOpenedBeyondKept);
    EXPECT_EQ(*words_of(directory / "flooded").begin(), std::to_string(20000 + 5));
    EXPECT_EQ(*words_of(directory / "trimmed").begin(), "2");
}

// In a fresh pid namespace the program gets a small pid: every name up to kPlantedPids is taken
// before it starts, and afterwards each planted file must be exactly as it was.
constexpr const char* kPlantedPids = "300";
const std::string kPlantEveryName = std::string("mkdir /dev/shm/planted; i=1; while [ $i -le ") + kPlantedPids +
                                    " ]; do echo planted > /dev/shm/planted/leakwrap.$i; i=$((i + 1)); done; ";
const std::string kRunThenShowThePlantedFiles =
    "env \"$1\" \"$2\"; cat /dev/shm/planted/* /dev/shm/leakwrap.* | sort | uniq -c; ls /dev/shm | wc -l";

TEST(Faults, SymbolicLinkPlantedUnderTheSegmentNameIsNeverFollowed) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=8m", kPlantEveryName + "ln -s /dev/shm/planted/* /dev/shm/; " + kRunThenShowThePlantedFiles);
    EXPECT_NE(warning.find("not a leakwrap segment"), std::string::npos) << warning;
}

TEST(Faults, FileOfAnotherOwnerUnderTheSegmentNameIsLeftAlone) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=8m", kPlantEveryName + "cp -p /dev/shm/planted/* /dev/shm/; chown 65534 /dev/shm/leakwrap.*; " +
                       kRunThenShowThePlantedFiles);
    EXPECT_NE(warning.find("not a leakwrap segment"), std::string::npos) << warning;
}

TEST(Faults, ForeignDataOfOurOwnUnderTheSegmentNameIsLeftAlone) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=8m", kPlantEveryName + "cp -p /dev/shm/planted/* /dev/shm/; chmod 600 /dev/shm/leakwrap.*; " +
                       kRunThenShowThePlantedFiles);
    EXPECT_NE(warning.find("not a leakwrap segment"), std::string::npos) << warning;
}

}  // namespace
}  // namespace leakwrap::e2e
