#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace leakwrap::e2e {

namespace paths {
const std::string preload_library = LEAKWRAP_PRELOAD_LIBRARY;
const std::string report_tool = LEAKWRAP_REPORT_TOOL;
const std::string peak_rss = LEAKWRAP_PEAK_RSS;
const std::string cxx_compiler = LEAKWRAP_CXX_COMPILER;
const std::string python3 = LEAKWRAP_PYTHON3;
const std::string perl = LEAKWRAP_PERL;
const std::string git = LEAKWRAP_GIT;
std::string program(std::string_view name) { return std::string(LEAKWRAP_TEST_PROGRAM_DIR) + "/" + std::string(name); }
std::string example(std::string_view name) { return std::string(LEAKWRAP_EXAMPLE_DIR) + "/" + std::string(name); }
}  // namespace paths

namespace {

using Clock = std::chrono::steady_clock;

// Writing the release line to a target that already died must fail the test, not kill it.
const bool g_sigpipe_ignored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

[[noreturn]] void throw_errno(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

struct Pipe {
    int read_end = -1;
    int write_end = -1;
    Pipe() {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
        read_end = fds[0];
        write_end = fds[1];
    }
};

void close_fd(int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
}

int milliseconds_until(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::max<long long>(0, left.count()));
}

// Reads what is available on fd into `into`; returns false at EOF.
bool read_available(int fd, std::string& into) {
    char buffer[4096];
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0) {
        if (errno == EINTR || errno == EAGAIN) return true;
        throw_errno("read from child");
    }
    into.append(buffer, static_cast<std::size_t>(got));
    return got > 0;
}

// Starts argv with the given stdin/stdout/stderr (-1: inherit ours) and working directory.
pid_t spawn(const std::vector<std::string>& argv, const Environment& environment, int stdin_fd, int stdout_fd,
            int stderr_fd, const std::string& working_directory) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
    if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, STDERR_FILENO);
    if (!working_directory.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_directory.c_str());

    std::vector<char*> argv_pointers;
    for (const auto& argument : argv) argv_pointers.push_back(const_cast<char*>(argument.c_str()));
    argv_pointers.push_back(nullptr);
    const std::vector<std::string> entries = environment.entries();
    std::vector<char*> environment_pointers;
    for (const auto& entry : entries) environment_pointers.push_back(const_cast<char*>(entry.c_str()));
    environment_pointers.push_back(nullptr);

    pid_t pid = -1;
    const int error =
        posix_spawnp(&pid, argv_pointers[0], &actions, nullptr, argv_pointers.data(), environment_pointers.data());
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
    return pid;
}

// Waits for pid until the deadline; kills it if the deadline passes first.
int reap(pid_t pid, Clock::time_point deadline, const std::string& name) {
    int status = 0;
    while (true) {
        const pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) return exit_code_of(status);
        if (got < 0 && errno != EINTR) throw_errno("waitpid " + name);
        if (Clock::now() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            throw std::runtime_error(name + " did not exit in time; killed");
        }
        std::this_thread::sleep_for(10ms);
    }
}

}  // namespace

Environment Environment::bare() {
    Environment environment;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const auto equals = text.find('=');
        if (equals == std::string_view::npos) continue;
        const std::string name(text.substr(0, equals));
        // DEBUGINFOD_URLS would have every report ask a server for the debug info of every
        // module without it: slow, and the answers depend on the network.
        if (name == "LD_PRELOAD" || name.starts_with("LEAKWRAP_") || name == "DEBUGINFOD_URLS") continue;
        environment.variables_[name] = std::string(text.substr(equals + 1));
    }
    return environment;
}

Environment Environment::profiled() { return bare().set("LD_PRELOAD", paths::preload_library); }

Environment& Environment::set(const std::string& name, const std::string& value) {
    variables_[name] = value;
    return *this;
}

std::vector<std::string> Environment::entries() const {
    std::vector<std::string> entries;
    for (const auto& [name, value] : variables_) entries.push_back(name + "=" + value);
    return entries;
}

int exit_code_of(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return -1;
}

Completed run(const std::vector<std::string>& argv, const Environment& environment,
              const std::string& working_directory, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    Pipe out, err;
    const pid_t pid = spawn(argv, environment, -1, out.write_end, err.write_end, working_directory);
    close_fd(out.write_end);
    close_fd(err.write_end);

    Completed completed{};
    pollfd fds[2] = {{out.read_end, POLLIN, 0}, {err.read_end, POLLIN, 0}};
    std::string* sinks[2] = {&completed.out, &completed.err};
    int open_streams = 2;
    while (open_streams > 0 && Clock::now() < deadline) {
        if (poll(fds, 2, milliseconds_until(deadline)) < 0 && errno != EINTR) throw_errno("poll");
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            if (!read_available(fds[i].fd, *sinks[i])) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_streams;
            }
        }
    }
    for (auto& fd : fds)
        if (fd.fd >= 0) close(fd.fd);
    completed.exit_code = reap(pid, deadline, argv[0]);
    return completed;
}

Target::Target(const std::vector<std::string>& argv, const Environment& environment) {
    Pipe in, out;
    pid_ = spawn(argv, environment, in.read_end, out.write_end, -1, {});
    close(in.read_end);
    close(out.write_end);
    stdin_fd_ = in.write_end;
    stdout_fd_ = out.read_end;
}

Target::~Target() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        int status;
        waitpid(pid_, &status, 0);
    }
    close_fd(stdin_fd_);
    close_fd(stdout_fd_);
}

std::vector<std::string> Target::wait_ready(std::string_view marker, std::chrono::seconds timeout) {
    return read_until(marker, timeout).first;
}

std::string Target::wait_for_line(std::string_view marker, std::chrono::seconds timeout) {
    return read_until(marker, timeout).second;
}

std::pair<std::vector<std::string>, std::string> Target::read_until(std::string_view marker,
                                                                    std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::vector<std::string> lines;
    while (true) {
        std::size_t newline;
        while ((newline = unread_output_.find('\n')) != std::string::npos) {
            std::string line = unread_output_.substr(0, newline);
            unread_output_.erase(0, newline + 1);
            if (line.find(marker) != std::string::npos) return {std::move(lines), std::move(line)};
            lines.push_back(std::move(line));
        }
        if (Clock::now() >= deadline) {
            kill_and_reap();
            throw std::runtime_error("target did not print " + std::string(marker) + " in time; killed");
        }
        pollfd fd{stdout_fd_, POLLIN, 0};
        if (poll(&fd, 1, milliseconds_until(deadline)) < 0 && errno != EINTR) throw_errno("poll");
        if (fd.revents != 0 && !read_available(stdout_fd_, unread_output_)) {
            const int code = wait_for_exit(deadline);
            throw std::runtime_error("target exited with " + std::to_string(code) + " before printing " +
                                     std::string(marker));
        }
    }
}

void Target::send_line(std::string_view line) {
    const std::string with_newline = std::string(line) + '\n';
    if (write(stdin_fd_, with_newline.data(), with_newline.size()) != static_cast<ssize_t>(with_newline.size()))
        throw_errno("write to the target's stdin");
}

int Target::release_and_wait(std::chrono::seconds timeout) {
    // A target that already died makes this write fail with EPIPE; its exit code tells why.
    (void)!write(stdin_fd_, "\n", 1);
    close_fd(stdin_fd_);
    return wait_for_exit(Clock::now() + timeout);
}

int Target::kill_and_reap() { return signal_and_wait(SIGKILL); }

int Target::signal_and_wait(int signal, std::chrono::seconds timeout) {
    kill(pid_, signal);
    return wait_for_exit(Clock::now() + timeout);
}

int Target::wait_for_exit(Clock::time_point deadline) {
    // Keep draining stdout so a chatty target cannot block on a full pipe.
    while (true) {
        int status = 0;
        const pid_t got = waitpid(pid_, &status, WNOHANG);
        if (got == pid_) {
            pid_ = -1;
            return exit_code_of(status);
        }
        if (Clock::now() >= deadline) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            pid_ = -1;
            throw std::runtime_error("target did not exit in time; killed");
        }
        if (stdout_fd_ >= 0) {
            pollfd fd{stdout_fd_, POLLIN, 0};
            if (poll(&fd, 1, 10) > 0 && !read_available(stdout_fd_, unread_output_)) close_fd(stdout_fd_);
        } else {
            std::this_thread::sleep_for(10ms);
        }
    }
}

pid_t fork_leak_child_pid(const std::vector<std::string>& lines_before_ready) {
    for (const auto& line : lines_before_ready)
        if (line.starts_with("CHILD ")) return static_cast<pid_t>(std::stoi(line.substr(6)));
    throw std::runtime_error("no CHILD line before READY");
}

std::string segment_path(pid_t pid) { return "/dev/shm/leakwrap." + std::to_string(pid); }

bool segment_exists(pid_t pid) {
    struct stat info;
    return stat(segment_path(pid).c_str(), &info) == 0;
}

pid_t unused_pid() {
    for (pid_t pid = 999999; pid > 1; --pid)
        if (kill(pid, 0) != 0 && errno == ESRCH && !segment_exists(pid)) return pid;
    throw std::runtime_error("no unused pid");
}

Completed run_report(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{paths::report_tool};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return run(argv, Environment::bare());
}

long peak_resident_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}

long reader_peak_kib(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{paths::peak_rss, paths::report_tool};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const Completed completed = run(argv, Environment::bare());
    if (completed.exit_code != 0)
        throw std::runtime_error("leakwrap-report failed: exit " + std::to_string(completed.exit_code) + ": " +
                                 completed.err);
    return std::stol(completed.out);
}

nlohmann::json report_json(pid_t pid, const std::vector<std::string>& more_arguments) {
    std::vector<std::string> arguments{std::to_string(pid), "--format", "json", "--top", "0"};
    arguments.insert(arguments.end(), more_arguments.begin(), more_arguments.end());
    const Completed report = run_report(arguments);
    if (report.exit_code != 0)
        throw std::runtime_error("leakwrap-report " + std::to_string(pid) + " exited " +
                                 std::to_string(report.exit_code) + ": " + report.err);
    return nlohmann::json::parse(report.out);
}

void PrintTo(const Counters& counters, std::ostream* out) {
    *out << "{live_blocks " << counters.live_blocks << ", live_bytes " << counters.live_bytes << ", allocs "
         << counters.allocs << ", frees " << counters.frees << "}";
}

namespace {

template <typename Matches>
SiteMatch sites_matching(const nlohmann::json& report, std::size_t frames_to_search, Matches matches) {
    SiteMatch match;
    for (const auto& site : report.at("sites")) {
        const auto& frames = site.at("frames");
        for (std::size_t i = 0; i < std::min(frames_to_search, frames.size()); ++i) {
            const auto& function = frames[i].at("function");
            if (!function.is_string() || !matches(function.get<std::string_view>())) continue;
            ++match.sites;
            match.counters.live_blocks += site.at("live_blocks").get<long long>();
            match.counters.live_bytes += site.at("live_bytes").get<long long>();
            match.counters.allocs += site.at("allocs").get<long long>();
            match.counters.frees += site.at("frees").get<long long>();
            break;
        }
    }
    return match;
}

}  // namespace

SiteMatch sites_calling(const nlohmann::json& report, std::string_view function, std::size_t frames_to_search) {
    return sites_matching(report, frames_to_search, [function](std::string_view name) { return name == function; });
}

SiteMatch sites_calling_function_containing(const nlohmann::json& report, std::string_view fragment,
                                            std::size_t frames_to_search) {
    return sites_matching(report, frames_to_search,
                          [fragment](std::string_view name) { return name.find(fragment) != std::string_view::npos; });
}

const nlohmann::json* overflow_site(const nlohmann::json& report) {
    for (const auto& site : report.at("sites"))
        if (site.at("overflow").get<bool>()) return &site;
    return nullptr;
}

void expect_consistent_totals(const nlohmann::json& report) {
    const auto& totals = report.at("totals");
    const auto& sites = report.at("sites");
    // A row merges the records of one stack (one per size class); "sites" counts the records.
    std::size_t records = 0;
    for (const auto& site : sites) records += site.at("records").size();
    EXPECT_EQ(totals.at("sites").get<std::size_t>(), records);
    for (const char* field : {"live_bytes", "live_blocks", "allocs", "frees", "alloc_bytes", "free_bytes"}) {
        long long sum = 0;
        for (const auto& site : sites) sum += site.at(field).get<long long>();
        EXPECT_EQ(totals.at(field).get<long long>(), sum) << "totals." << field << " vs the sum over sites";
    }
    for (const auto& site : sites) {
        EXPECT_EQ(site.at("live_blocks").get<long long>(),
                  site.at("allocs").get<long long>() - site.at("frees").get<long long>())
            << "site " << site.at("id");
        EXPECT_EQ(site.at("live_bytes").get<long long>(),
                  site.at("alloc_bytes").get<long long>() - site.at("free_bytes").get<long long>())
            << "site " << site.at("id");
    }
}

}  // namespace leakwrap::e2e
