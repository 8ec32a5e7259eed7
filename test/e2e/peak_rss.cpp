// peak_rss COMMAND [ARGUMENT...]: runs the command with its stdout discarded and prints its peak
// resident size in KiB. A child's count of its peak starts from the resident size of the process
// it was forked from (exec keeps the larger of the old and the new), so a test process that has
// grown to tens of megabytes cannot measure a small command itself: this one, small, runs it.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: peak_rss COMMAND [ARGUMENT...]\n");
        return 2;
    }
    const pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
        const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(127);
        execv(argv[1], argv + 1);
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    if (wait4(child, &status, 0, &usage) != child) return 2;
    std::printf("%ld\n", usage.ru_maxrss);  // KiB on Linux
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
