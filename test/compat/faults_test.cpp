// Faults and limits of the preload never break the program it runs in: garbage settings, a full
// site table, a /dev/shm where no segment can be made, names in /dev/shm planted by someone else.
// Each costs exactly one warning line on stderr and nothing else. And a segment whose pid now
// belongs to another process is reported stale, never alive.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <leakwrap/segment_layout.h>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "dead_segments.h"
#include "ground_truth.h"
#include "harness.h"
#include "temporary_directory.h"
#include "process_identity.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

// The profiled run must print what the bare one prints, plus exactly one warning line on
// stderr, which is returned.
std::string expect_same_output_and_one_warning(const Completed& bare, const Completed& with) {
    EXPECT_EQ(bare.exit_code, 0) << bare.err;
    EXPECT_EQ(with.exit_code, bare.exit_code) << with.err;
    EXPECT_EQ(with.out, bare.out);
    std::vector<std::string> warnings, other;
    for (std::string& line : lines_of(with.err))
        (line.starts_with("leakwrap[") ? warnings : other).push_back(std::move(line));
    EXPECT_EQ(other, lines_of(bare.err));
    EXPECT_EQ(warnings.size(), 1u) << with.err;
    return warnings.empty() ? std::string() : warnings.front();
}

// Runs argv bare and with `profiled`, as above.
std::string expect_same_output_and_one_warning(const std::vector<std::string>& argv,
                                               const Environment& profiled) {
    return expect_same_output_and_one_warning(run(argv, Environment::bare()), run(argv, profiled));
}

void expect_one_warning_naming(const std::string& variable, const std::string& value) {
    const std::string warning = expect_same_output_and_one_warning(
        {paths::program("semantics")}, Environment::profiled().set(variable, value));
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
    EXPECT_EQ(sites_calling_function_containing(report, "many_sites_leak<", 1).sites,
              ground_truth::many_sites::kSites);
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

// A private mount namespace with its own /dev/shm, made by `mount_options`; only `program` runs
// under the preload (the shell and mount would create segments on the real /dev/shm first).
std::vector<std::string> in_private_dev_shm(const std::string& mount_options, const std::string& script,
                                            bool profiled, const std::string& program) {
    return {"unshare", "--mount", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c",
            "set -e; mount -t tmpfs -o " + mount_options + " tmpfs /dev/shm; " + script, "sh",
            profiled ? "LD_PRELOAD=" + paths::preload_library : "LEAKWRAP_UNPROFILED=1",
            paths::program(program)};
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
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=4k", "env \"$1\" \"$2\"; ls /dev/shm");
    EXPECT_NE(warning.find("no space"), std::string::npos) << warning;
}

// 1072 KiB hold what a segment backs at creation (header, bins, site deltas, the first chunks
// of the site, module and string tables: about 1030 KiB), not the next chunk of site slots that
// many_sites' 256 sites need: /dev/shm fills up while the program runs. The warning must say so,
// not blame the site table.
TEST(Faults, DevShmFillingUpWhileTheProgramRunsWarnsOnceThatItIsFull) {
    if (!can_make_namespaces()) GTEST_SKIP() << "needs unshare --mount --pid (root or CAP_SYS_ADMIN)";
    const std::string warning = expect_one_warning_in_private_dev_shm(
        "size=1072k", "env \"$1\" \"$2\" < /dev/null; ls /dev/shm | wc -l", "many_sites");
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
        "set -e; mount -t tmpfs -o size=" + size + " tmpfs /dev/shm; P=\"$1\"; PROGRAM=\"$2\"; d=\"$3\"; "
        "start() { mkfifo \"$d/in$1\" \"$d/out$1\"; "
        "  env $EXTRA_ENVIRONMENT LD_PRELOAD=\"$P\" \"$PROGRAM\" < \"$d/in$1\" > \"$d/out$1\" & pid=$!; "
        "  exec 3> \"$d/in$1\" 4< \"$d/out$1\"; read ready <&4; }; " + body;
    std::vector<std::string> argv{"unshare", "--mount",   "--pid",      "--fork",
                                  "--mount-proc", "/bin/sh", "-c", script, "sh", paths::preload_library,
                                  paths::program(program), directory.string()};
    argv.insert(argv.end(), more.begin(), more.end());
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
        "1072k",
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
                if (entry.at("class").get<uint32_t>() == block_class) overflowed = entry.at("live_blocks").get<long long>();
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
    EXPECT_NE(text.find("overflow site (allocations from stacks that found no room in /dev/shm)"),
              std::string::npos)
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
    return "i=1; while [ $i -le " + n + " ]; do "
           "  start $i; kill -TERM $pid; wait $pid 2> /dev/null || true; exec 3>&- 4<&-; "
           "  echo $pid >> \"$d/killed\"; touch -m -d \"$((" + n + " + 1 - i)) minutes ago\" /dev/shm/leakwrap.$pid; "
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
const std::string kPlantEveryName =
    std::string("mkdir /dev/shm/planted; i=1; while [ $i -le ") + kPlantedPids +
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

// Any local user can plant an object under /dev/shm/leakwrap.<pid> for pids to come. These
// tests need no namespace: the child of a fork plants it under its own pid, then execs the
// program profiled, which keeps the pid.
enum class Planted { fifo, link_to_fifo, directory };

// What must not change about a planted object, readably for a failure message.
std::string planted_state(const std::string& path) {
    struct stat status {};
    if (lstat(path.c_str(), &status) != 0) return path + " is gone: " + std::strerror(errno);
    std::error_code not_a_link;
    std::ostringstream state;
    state << path << ": mode 0" << std::oct << status.st_mode << std::dec << ", inode "
          << status.st_dev << ':' << status.st_ino << ", owner " << status.st_uid << ", links "
          << status.st_nlink << ", modified " << status.st_mtim.tv_sec << '.'
          << status.st_mtim.tv_nsec << ", link to '" << fs::read_symlink(path, not_a_link).string()
          << "'";
    return state.str();
}

// A descriptor closed however the test ends.
struct OwnedFd {
    int fd;
    ~OwnedFd() {
        if (fd >= 0) close(fd);
    }
};

std::string contents_of(const OwnedFd& file) {
    std::string text;
    char buffer[4096];
    for (off_t offset = 0;;) {
        const ssize_t got = pread(file.fd, buffer, sizeof buffer, offset);
        if (got <= 0) return text;
        text.append(buffer, static_cast<std::size_t>(got));
        offset += got;
    }
}

// Removes what a test planted, however it ends.
struct PlantedPaths {
    std::vector<std::string> paths;
    ~PlantedPaths() {
        for (const std::string& path : paths) {
            std::error_code ignored;
            fs::remove(path, ignored);
        }
    }
};

// Runs semantics bare, then profiled over a planted segment name; it must print the same plus
// the one warning, and every planted object must be as it was. A preload that waits on what was
// planted is killed after 30 s, which fails the test.
void expect_planted_segment_name_left_alone(Planted planted) {
    const std::string program = paths::program("semantics");
    const Completed bare = run({program}, Environment::bare());

    PlantedPaths planted_paths;
    const TemporaryDirectory fifo_directory;
    const std::string fifo = (fifo_directory.path() / "planted-fifo").string();
    if (planted == Planted::link_to_fifo) {
        ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << fifo << ": " << std::strerror(errno);
        planted_paths.paths.push_back(fifo);
    }
    // Everything the child needs is made before the fork: between fork and exec it calls only
    // async-signal-safe functions.
    const std::vector<std::string> environment = Environment::profiled().entries();
    std::vector<char*> environment_pointers;
    for (const std::string& entry : environment) environment_pointers.push_back(const_cast<char*>(entry.c_str()));
    environment_pointers.push_back(nullptr);
    char* const argv[] = {const_cast<char*>(program.c_str()), nullptr};
    const OwnedFd out{memfd_create("stdout", MFD_CLOEXEC)};
    const OwnedFd err{memfd_create("stderr", MFD_CLOEXEC)};
    const OwnedFd null{open("/dev/null", O_RDONLY | O_CLOEXEC)};
    ASSERT_TRUE(out.fd >= 0 && err.fd >= 0 && null.fd >= 0) << std::strerror(errno);
    constexpr int kCannotPlant = 125;
    constexpr int kCannotExec = 126;

    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
        char path[64];
        std::snprintf(path, sizeof path, "/dev/shm/leakwrap.%d", static_cast<int>(getpid()));
        unlink(path);  // a segment left by an earlier process with this pid
        const int made = planted == Planted::fifo           ? mkfifo(path, 0600)
                         : planted == Planted::link_to_fifo ? symlink(fifo.c_str(), path)
                                                            : mkdir(path, 0700);
        if (made != 0) _exit(kCannotPlant);
        raise(SIGSTOP);  // until the parent has noted what was planted
        if (dup2(null.fd, STDIN_FILENO) < 0 || dup2(out.fd, STDOUT_FILENO) < 0 ||
            dup2(err.fd, STDERR_FILENO) < 0)
            _exit(kCannotExec);
        execve(argv[0], argv, environment_pointers.data());
        _exit(kCannotExec);
    }
    const std::string segment_name = segment_path(pid);
    planted_paths.paths.push_back(segment_name);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
    ASSERT_TRUE(WIFSTOPPED(status)) << "cannot plant " << segment_name << " (exit " << exit_code_of(status) << ")";
    std::vector<std::string> states_before;
    for (const std::string& path : planted_paths.paths) states_before.push_back(planted_state(path));
    kill(pid, SIGCONT);

    constexpr auto kPatience = 30s;
    bool finished = false;
    for (const auto deadline = std::chrono::steady_clock::now() + kPatience;
         !finished && std::chrono::steady_clock::now() < deadline;) {
        finished = waitpid(pid, &status, WNOHANG) == pid;
        if (!finished) std::this_thread::sleep_for(10ms);
    }
    if (!finished) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    const Completed with{exit_code_of(status), contents_of(out), contents_of(err)};
    ASSERT_TRUE(finished) << "semantics was still running " << kPatience.count() << " s after it started over "
                          << segment_name << "; killed. Its stderr: " << with.err;
    ASSERT_NE(with.exit_code, kCannotExec) << "cannot run " << program;

    const std::string warning = expect_same_output_and_one_warning(bare, with);
    EXPECT_NE(warning.find("not a leakwrap segment"), std::string::npos) << warning;
    for (std::size_t i = 0; i < planted_paths.paths.size(); ++i)
        EXPECT_EQ(planted_state(planted_paths.paths[i]), states_before[i]);
}

TEST(Faults, FifoPlantedUnderTheSegmentNameNeitherBlocksTheProgramNorIsTouched) {
    expect_planted_segment_name_left_alone(Planted::fifo);
}

TEST(Faults, LinkToAFifoPlantedUnderTheSegmentNameNeitherBlocksTheProgramNorIsTouched) {
    expect_planted_segment_name_left_alone(Planted::link_to_fifo);
}

TEST(Faults, DirectoryPlantedUnderTheSegmentNameIsLeftAlone) {
    expect_planted_segment_name_left_alone(Planted::directory);
}

// pid reuse: a real segment, re-labelled as belonging to a live process that did not write it.
class ForgedSegment {
public:
    // The segment of a finished alloc_kinds run, kept with LEAKWRAP_KEEP=1.
    static std::vector<char> real_segment() {
        Target target({paths::program("alloc_kinds")},
                      Environment::profiled()
                          .set("LEAKWRAP_KEEP", "1")
                          .set("LEAKWRAP_MAX_SITES", std::to_string(layout::kMinSiteCapacity + 64)));
        target.wait_ready();
        const pid_t pid = target.pid();
        EXPECT_EQ(target.release_and_wait(), 0);
        std::ifstream file(segment_path(pid), std::ios::binary);
        std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
        fs::remove(segment_path(pid));
        return bytes;
    }

    // Writes `segment` as `path`, claiming `pid`, still running, started at `start_time_ticks`.
    ForgedSegment(fs::path path, std::vector<char> segment, pid_t pid, uint64_t start_time_ticks)
        : path_(std::move(path)) {
        layout::Header header;
        std::memcpy(&header, segment.data(), sizeof header);
        header.pid = pid;
        header.start_time_ticks = start_time_ticks;
        header.process_state = layout::kProcessRunning;
        std::memcpy(segment.data(), &header, sizeof header);
        const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("cannot create " + path_.string());
        const bool written = write(fd, segment.data(), segment.size()) == static_cast<ssize_t>(segment.size());
        close(fd);
        if (!written) throw std::runtime_error("cannot write " + path_.string());
    }
    ~ForgedSegment() { fs::remove(path_); }
    ForgedSegment(const ForgedSegment&) = delete;
    ForgedSegment& operator=(const ForgedSegment&) = delete;

private:
    fs::path path_;
};

TEST(Faults, SegmentOfARecycledPidIsStaleNeverAlive) {
    const std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    Target unrelated({"/bin/sleep", "60"}, Environment::bare());
    const std::optional<uint64_t> start = process_start_time_ticks(unrelated.pid());
    ASSERT_TRUE(start.has_value());
    const uint64_t real_start = *start;
    {
        const ForgedSegment forged(segment_path(unrelated.pid()), segment, unrelated.pid(), real_start + 1);
        EXPECT_EQ(report_json(unrelated.pid()).at("state"), "stale");
        const Completed list = run_report({"--list"});
        bool listed_stale = false;
        for (const std::string& line : lines_of(list.out))
            listed_stale = listed_stale || (line.starts_with(std::to_string(unrelated.pid()) + " ") &&
                                            line.find("stale") != std::string::npos);
        EXPECT_TRUE(listed_stale) << list.out;
    }
    // The same bytes with the true start time: the check above is about the start time alone.
    const ForgedSegment genuine(segment_path(unrelated.pid()), segment, unrelated.pid(), real_start);
    EXPECT_EQ(report_json(unrelated.pid()).at("state"), "alive");
}

// A site counting more frees than allocations is corrupt, or a live copy caught it mid-update:
// the report is made, with one warning line naming the site, and the site's live counts are 0,
// never a wrapped-around 2^64.
TEST(Faults, SiteWithMoreFreesThanAllocationsIsReportedWithOneWarningLine) {
    std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    layout::Header header;
    std::memcpy(&header, segment.data(), sizeof header);
    uint32_t corrupted = 0;
    layout::SiteRecord record{};
    for (uint32_t slot = layout::kOverflowSites; slot < std::min(header.sites_claimed, header.site_capacity); ++slot) {
        char* at = segment.data() + header.sites_offset + uint64_t{slot} * header.site_record_size;
        std::memcpy(&record, at, sizeof record);
        if (record.state != layout::kReady) continue;
        record.frees = record.allocs + 1000000;  // more than its delta entries can add to allocs
        std::memcpy(at, &record, sizeof record);
        corrupted = slot;
        break;
    }
    ASSERT_NE(corrupted, 0u) << "alloc_kinds left no ready site";
    const TemporaryDirectory scratch;
    const fs::path copy = scratch.path() / "corrupt";
    const ForgedSegment written(copy, segment, header.pid, header.start_time_ticks);

    for (const char* format : {"text", "json"}) {
        const Completed report = run_report({"--segment", copy.string(), "--format", format, "--top", "0"});
        EXPECT_EQ(report.exit_code, 0) << report.err;
        const std::vector<std::string> lines = lines_of(report.err);
        ASSERT_EQ(lines.size(), 1u) << report.err;
        EXPECT_TRUE(lines[0].starts_with("leakwrap-report: warning: site " + std::to_string(corrupted) +
                                         " counts more frees than allocations"))
            << lines[0];
        if (std::string(format) == "json") {
            for (const auto& site : nlohmann::json::parse(report.out).at("sites"))
                EXPECT_LT(site.at("live_blocks").get<uint64_t>(), uint64_t{1} << 32) << site;
        }
    }
}

TEST(Faults, CopiedSegmentOfARecycledPidIsStaleNeverAlive) {
    const std::vector<char> segment = ForgedSegment::real_segment();
    ASSERT_GE(segment.size(), sizeof(layout::Header));
    const TemporaryDirectory scratch;
    const fs::path copy = scratch.path() / "forged";
    const ForgedSegment forged(copy, segment, getpid(), process_start_time_ticks(getpid()).value() + 1);
    const Completed report = run_report({"--segment", copy.string(), "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_EQ(nlohmann::json::parse(report.out).at("state"), "stale");
}

}  // namespace
}  // namespace leakwrap::e2e
