// The one harness every e2e test uses: start real programs with or without the preload, drive the
// READY/release handshake, run the real leakwrap-report and sum what it says about a function.
// Every wait has a deadline; on a miss the process is killed and the helper throws, which fails
// the test instead of hanging CTest.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap::e2e {

using namespace std::chrono_literals;

// Built artifacts under test, from the build system.
namespace paths {
extern const std::string preload_library;
extern const std::string report_tool;
extern const std::string peak_rss;  // test/e2e/peak_rss.cpp
extern const std::string cxx_compiler;
extern const std::string python3;
extern const std::string perl;
extern const std::string git;
std::string program(std::string_view name);  // a target program from test/programs
std::string example(std::string_view name);  // an example program from examples/
}  // namespace paths

// The environment a child runs with: ours without LD_PRELOAD, LEAKWRAP_* and DEBUGINFOD_URLS (so
// the caller's shell cannot change a test's outcome), plus what the test sets.
class Environment {
public:
    static Environment bare();
    static Environment profiled();  // bare + LD_PRELOAD of the library under test
    Environment& set(const std::string& name, const std::string& value);
    std::vector<std::string> entries() const;

private:
    std::map<std::string, std::string> variables_;
};

// How a process ended: its exit code, or 128 + signal like a shell reports it.
int exit_code_of(int wait_status);

struct Completed {
    int exit_code;
    std::string out;
    std::string err;
};

// Runs argv to completion with empty stdin, collecting stdout and stderr.
Completed run(const std::vector<std::string>& argv, const Environment& environment,
              const std::string& working_directory = {}, std::chrono::seconds timeout = 60s);

// A running target program that follows the handshake in test/programs/handshake.h.
// Its stderr goes to ours, so CTest shows it when a test fails.
class Target {
public:
    Target(const std::vector<std::string>& argv, const Environment& environment);
    ~Target();  // kills and reaps a target that is still running
    Target(const Target&) = delete;
    Target& operator=(const Target&) = delete;

    pid_t pid() const { return pid_; }
    // Waits for a line containing `marker` (READY for the test programs); returns the lines
    // printed before it.
    std::vector<std::string> wait_ready(std::string_view marker = "READY", std::chrono::seconds timeout = 30s);
    // Waits for a line containing `marker` and returns that line (a server's address, say).
    std::string wait_for_line(std::string_view marker, std::chrono::seconds timeout = 30s);
    // Sends one line to the target's stdin (a command of a program that reads them).
    void send_line(std::string_view line);
    // Sends the release line and waits for the exit; returns the exit code.
    int release_and_wait(std::chrono::seconds timeout = 30s);
    // SIGKILL and reap; returns the exit code (137).
    int kill_and_reap();
    // Sends `signal` (SIGTERM, say) and waits for the exit; returns the exit code.
    int signal_and_wait(int signal, std::chrono::seconds timeout = 30s);

private:
    int wait_for_exit(std::chrono::steady_clock::time_point deadline);
    // The lines before the first one containing `marker`, then that line.
    std::pair<std::vector<std::string>, std::string> read_until(std::string_view marker, std::chrono::seconds timeout);

    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    int stdout_fd_ = -1;
    std::string unread_output_;
};

// The child's pid that fork_leak says ("CHILD <pid>") in the lines before its READY.
pid_t fork_leak_child_pid(const std::vector<std::string>& lines_before_ready);

std::string segment_path(pid_t pid);
bool segment_exists(pid_t pid);
// A pid that no process has and no segment is named after.
pid_t unused_pid();

// What no reader command may exceed on a segment this resident, in KiB: twice the segment plus
// the reader's fixed base (its code and libraries, the symbol tables of the modules it names;
// test/e2e/reader_memory_test.cpp says what the base holds and what each command takes).
constexpr long kReaderBaseKiB = 5 * 1024;
constexpr long reader_memory_bound_kib(long segment_kib) { return 2 * segment_kib + kReaderBaseKiB; }

// The peak resident size so far of a running process, in KiB (VmHWM); 0 if it has none.
long peak_resident_kib(pid_t pid);

// leakwrap-report, run bare with the given arguments.
Completed run_report(const std::vector<std::string>& arguments);
// The peak resident size of `leakwrap-report arguments...` in KiB (its stdout discarded), run
// from peak_rss so that the test process's own size does not count; throws unless it exits 0.
long reader_peak_kib(const std::vector<std::string>& arguments);
// `leakwrap-report <pid> --format json --top 0 [more_arguments]`, parsed; throws unless it exits 0.
nlohmann::json report_json(pid_t pid, const std::vector<std::string>& more_arguments = {});

struct Counters {
    long long live_blocks = 0;
    long long live_bytes = 0;
    long long allocs = 0;
    long long frees = 0;
    bool operator==(const Counters&) const = default;
};
void PrintTo(const Counters& counters, std::ostream* out);  // for gtest failure messages

struct SiteMatch {
    std::size_t sites = 0;
    Counters counters;  // summed over the matching sites
};

// The sites with a frame of exactly `function` among their first `frames_to_search` frames.
SiteMatch sites_calling(const nlohmann::json& report, std::string_view function, std::size_t frames_to_search);
// Same, for a function whose name contains `fragment` (template instances, say).
SiteMatch sites_calling_function_containing(const nlohmann::json& report, std::string_view fragment,
                                            std::size_t frames_to_search);
const nlohmann::json* overflow_site(const nlohmann::json& report);

// Totals must be the sum over the rows (exact mode), "sites" the number of records they merge, and
// each row's live counts its allocs minus its frees.
void expect_consistent_totals(const nlohmann::json& report);

}  // namespace leakwrap::e2e
