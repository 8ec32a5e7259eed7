// The exec family. exec replaces the process's image: the segment it wrote is then no longer
// the process's, though the pid lives on. A profiled new image replaces it at its start; one
// that is not profiled (run without the preload, static, set-user-ID) would leave it behind as
// if the process had been killed, one segment per command a profiled shell or server runs.
// So every exec call marks the segment kProcessReplacedByExec first, which tells readers and
// the next start's trim (dead_segments.h) that it is garbage once the process is gone, and
// marks it running again if the call returns (it failed).
//
// glibc's exec functions call its internal execve, which no preload can interpose: each is
// wrapped on its own, and calls the next definition of itself (RTLD_NEXT, resolved at start-up:
// a child forked while another thread held the loader's lock could never look it up).
// posix_spawn, system and popen run their child without fork's handlers (CLONE_VM), so that
// child never had a segment of its own to mark.
#pragma once

namespace leakwrap {

// At start-up, before any exec: the next definitions of the exec functions.
void resolve_exec_functions();

int exec_path(const char* path, char* const argv[], char* const envp[]);                          // execve
int exec_searching_path(const char* file, char* const argv[], char* const envp[]);                // execvpe
int exec_open_file(int fd, char* const argv[], char* const envp[]);                               // fexecve
int exec_at(int directory, const char* path, char* const argv[], char* const envp[], int flags);  // execveat

}  // namespace leakwrap
