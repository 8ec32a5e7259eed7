// Objects planted under /dev/shm/leakwrap.<pid> by a process that then runs the program
// profiled under that pid: the program runs as it does bare, with one warning line, and nothing
// planted is followed, blocked on or touched.
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
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "harness.h"
#include "one_warning.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

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
    state << path << ": mode 0" << std::oct << status.st_mode << std::dec << ", inode " << status.st_dev << ':'
          << status.st_ino << ", owner " << status.st_uid << ", links " << status.st_nlink << ", modified "
          << status.st_mtim.tv_sec << '.' << status.st_mtim.tv_nsec << ", link to '"
          << fs::read_symlink(path, not_a_link).string() << "'";
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
        if (dup2(null.fd, STDIN_FILENO) < 0 || dup2(out.fd, STDOUT_FILENO) < 0 || dup2(err.fd, STDERR_FILENO) < 0)
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

}  // namespace
}  // namespace leakwrap::e2e
