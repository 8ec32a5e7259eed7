// Forks from inside its own dl_iterate_phdr() callback. The child inherits the loader's lock
// held, under the parent's thread id: it must not need it, and bare it does not (it allocates
// and calls into a module loaded before). Under the preload, its first new stack would have
// the walk check the loader's modules.
//
// `helper`: meanwhile another thread waits for that lock, inside a fork-fenced section under
// the preload (its first call into a freshly loaded plugin makes the walk look the module up in
// the loader), so the fork's wait for it cannot end: the preload must give up after its bound
// rather than hang the program.
//
//   fork_in_loader_callback <path of libtorture_plugin.so> <scratch directory> alone|helper
//
// Prints "child exited 0" when the child allocated, called the plugin and exited normally.
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "handshake.h"
#include "plugin_copy.h"

namespace {

struct Scene {
    PluginChurn for_the_helper;
    PluginChurn for_the_child;
    std::atomic<bool> helper_may_start{false};
    int child_status = -1;
};

int fork_from_callback(dl_phdr_info*, size_t, void* context) {
    auto* scene = static_cast<Scene*>(context);
    // A helper now blocks on the loader's lock, which this callback holds until it returns.
    scene->helper_may_start.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        void* block = std::malloc(100);
        const bool ran = block != nullptr && scene->for_the_child(7) != 0;
        std::free(block);
        _exit(ran ? 0 : 3);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    scene->child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const bool with_helper = argc == 4 && std::strcmp(argv[3], "helper") == 0;
    if (argc != 4 || (!with_helper && std::strcmp(argv[3], "alone") != 0)) {
        std::fprintf(stderr, "usage: %s <plugin.so> <scratch directory> alone|helper\n", argv[0]);
        return 2;
    }
    const std::string directory = argv[2];
    Scene scene;
    scene.for_the_helper = load_plugin_copy(argv[1], directory + "/helper.so");
    scene.for_the_child = load_plugin_copy(argv[1], directory + "/child.so");
    std::thread helper([&scene, with_helper] {
        while (!scene.helper_may_start.load()) std::this_thread::yield();
        if (with_helper && scene.for_the_helper(5) == 0) fail("the helper's call");
    });
    dl_iterate_phdr(fork_from_callback, &scene);
    helper.join();
    std::printf("child exited %d\n", scene.child_status);
    return scene.child_status == 0 ? 0 : 1;
}
