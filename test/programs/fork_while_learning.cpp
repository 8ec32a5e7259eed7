// Forks while another thread keeps meeting code it has never run: every copy of a plugin is a
// module of its own, so under the preload each first call into one makes the walk look the
// module up in the loader and read its unwind table from its file. Each child then checks what
// it inherited and does what needs the loader and the unwinder itself: it throws and catches an
// exception, and calls a copy of the plugin that it has not called yet.
//
//   fork_while_learning <path of libtorture_plugin.so> <scratch directory>
//
// Prints "forks F learning L inherited I hung H failed X": L counts the forks made while the
// other thread had copies left to call, I counts the copies' descriptors that children
// found open, H the children still running after kChildSeconds (killed then), X those that ended
// otherwise than by exiting 0. Then says READY and waits (handshake.h), so that its segment can
// be read (ground_truth.h says what it allocated).
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ground_truth.h"
#include "handshake.h"
#include "plugin_copy.h"

namespace {

using namespace ground_truth::fork_while_learning;

constexpr int kChildSeconds = 20;
constexpr std::size_t kMinimumForks = 4;
constexpr std::size_t kMaximumForks = 200;

// Descriptors of this process open on a file in `directory`.
int descriptors_in(const std::string& directory) {
    DIR* fds = opendir("/proc/self/fd");
    if (fds == nullptr) return -1;
    int found = 0;
    while (const dirent* entry = readdir(fds)) {
        char target[4096];
        const std::string link = std::string("/proc/self/fd/") + entry->d_name;
        const ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
        if (length <= 0) continue;
        target[length] = '\0';
        if (std::strncmp(target, directory.c_str(), directory.size()) == 0) ++found;
    }
    closedir(fds);
    return found;
}

__attribute__((noinline)) void throw_through_here(int value) {
    if (value >= 0) throw std::runtime_error("unwound");
}

// The child: 0 if it could unwind and learn, and inherited nothing; writes what it found.
[[noreturn]] void be_the_child(const std::string& directory, PluginChurn unused_copy, int report) {
    const int inherited = descriptors_in(directory);
    int status = 0;
    try {
        throw_through_here(inherited);
        status = 3;
    } catch (const std::runtime_error&) {
    }
    if (unused_copy != nullptr && unused_copy(5) == 0) status = 4;
    if (write(report, &inherited, sizeof inherited) != sizeof inherited) status = 5;
    _exit(status);
}

struct Child {
    pid_t pid;
    int report;  // the read end of its pipe
};

struct Outcomes {
    int inherited = 0;
    int hung = 0;
    int failed = 0;
};

// Waits for every child until kChildSeconds from now; kills those still running then.
Outcomes wait_for(const std::vector<Child>& children) {
    Outcomes outcomes;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds);
    for (const Child& child : children) {
        int status = 0;
        bool hung = false;
        while (waitpid(child.pid, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() > deadline) {
                kill(child.pid, SIGKILL);
                waitpid(child.pid, &status, 0);
                hung = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        int inherited = -1;
        const bool reported = read(child.report, &inherited, sizeof inherited) == sizeof inherited;
        close(child.report);
        if (hung) {
            ++outcomes.hung;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !reported || inherited < 0) {
            ++outcomes.failed;
        } else {
            outcomes.inherited += inherited;
        }
    }
    return outcomes;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s <plugin.so> <scratch directory>\n", argv[0]);
        return 2;
    }
    const std::string directory = argv[2];
    const int copies = kCopies;
    const std::vector<PluginChurn> churns = load_plugin_copies(argv[1], directory, copies);
    // The last copy is left for the children: the learner never calls it.
    std::atomic<int> learned{0};
    std::atomic<unsigned long> checksum{0};
    std::thread learner([&] {
        for (int copy = 0; copy + 1 < copies; ++copy) {
            checksum += churns[static_cast<std::size_t>(copy)](ground_truth::torture_plugin::kChurnRounds);
            learned.store(copy + 1, std::memory_order_relaxed);
        }
    });
    // Children are forked one after the other, without waiting for them, while the learner
    // has copies left (and at least kMinimumForks of them), then waited for together.
    std::vector<Child> children;
    int while_learning = 0;
    while ((learned.load(std::memory_order_relaxed) + 1 < copies && children.size() < kMaximumForks) ||
           children.size() < kMinimumForks) {
        while_learning += learned.load(std::memory_order_relaxed) + 1 < copies;
        int pipe_ends[2];
        if (pipe(pipe_ends) != 0) fail("pipe");
        const pid_t child = fork();
        if (child < 0) fail("fork");
        if (child == 0) {
            close(pipe_ends[0]);
            be_the_child(directory, churns.back(), pipe_ends[1]);
        }
        close(pipe_ends[1]);
        children.push_back(Child{child, pipe_ends[0]});
    }
    const Outcomes outcomes = wait_for(children);
    learner.join();
    std::printf("forks %zu learning %d inherited %d hung %d failed %d checksum %lu\n", children.size(), while_learning,
                outcomes.inherited, outcomes.hung, outcomes.failed, checksum.load());
    announce_ready_and_wait_for_release();
    return 0;
}
