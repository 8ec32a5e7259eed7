#include "exec_calls.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "guard.h"
#include "lifecycle.h"
#include "segment.h"

namespace leakwrap {
namespace {

using PathExec = int (*)(const char*, char* const[], char* const[]);
using FileExec = int (*)(int, char* const[], char* const[]);
using AtExec = int (*)(int, const char*, char* const[], char* const[], int);

struct ExecFunctions {
    PathExec execve;
    PathExec execvpe;
    FileExec fexecve;
    AtExec execveat;
};
constinit ExecFunctions g_exec{};

template <typename Function>
Function next_definition(const char* name) {
    GuardScope guard;  // dlsym may allocate
    return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

// The segment marked as the image's that exec replaces, for as long as the call has not
// returned. A child of vfork() shares its parent's memory, segment included, and so marks
// nothing: its pid is not the segment's.
class ReplacedByExecMark {
public:
    ReplacedByExecMark() {
        if (!tracking_enabled() || g_segment.header == nullptr || g_segment.header->pid != getpid()) return;
        state().store(layout::kProcessReplacedByExec, std::memory_order_release);
        marked_ = true;
    }
    ~ReplacedByExecMark() {
        if (marked_) state().store(layout::kProcessRunning, std::memory_order_release);
    }
    ReplacedByExecMark(const ReplacedByExecMark&) = delete;
    ReplacedByExecMark& operator=(const ReplacedByExecMark&) = delete;

private:
    static std::atomic_ref<uint32_t> state() { return std::atomic_ref<uint32_t>(g_segment.header->process_state); }
    bool marked_ = false;
};

// An exec function called before the constructor resolved them (from another library's
// constructor): looked up now.
template <typename Function>
Function resolved(Function& function, const char* name) {
    if (function == nullptr) function = next_definition<Function>(name);
    return function;
}

template <typename Function, typename... Arguments>
int call_marked(Function& function, const char* name, Arguments... arguments) {
    const Function next = resolved(function, name);
    if (next == nullptr) {
        errno = ENOSYS;
        return -1;
    }
    ReplacedByExecMark mark;
    return next(arguments...);
}

}  // namespace

void resolve_exec_functions() {
    g_exec = ExecFunctions{next_definition<PathExec>("execve"), next_definition<PathExec>("execvpe"),
                           next_definition<FileExec>("fexecve"), next_definition<AtExec>("execveat")};
}

int exec_path(const char* path, char* const argv[], char* const envp[]) {
    return call_marked(g_exec.execve, "execve", path, argv, envp);
}

int exec_searching_path(const char* file, char* const argv[], char* const envp[]) {
    return call_marked(g_exec.execvpe, "execvpe", file, argv, envp);
}

int exec_open_file(int fd, char* const argv[], char* const envp[]) {
    return call_marked(g_exec.fexecve, "fexecve", fd, argv, envp);
}

int exec_at(int directory, const char* path, char* const argv[], char* const envp[], int flags) {
    return call_marked(g_exec.execveat, "execveat", directory, path, argv, envp, flags);
}

}  // namespace leakwrap
