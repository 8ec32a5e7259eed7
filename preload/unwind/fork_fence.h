// Work that a fork must not cut in two. A thread inside dl_iterate_phdr() holds glibc's
// dl_load_write_lock, which glibc 2.36 does not reset in a forked child; a thread inside a
// libunwind step may hold libunwind's lock; a walk that reads a module's unwind table holds the
// module's file open. A child forked meanwhile inherits the lock held by a thread it does not
// have, and waits forever at its first dl_iterate_phdr() or step: its own program's too (a C++
// exception's unwinding). Or it inherits a descriptor that its program never opened.
//
// So leakwrap does such work only inside a fenced section, and fork's prepare handler waits
// until no other thread is inside one, turning new ones away meanwhile. A thread turned away
// skips the work (a stack is recorded as far as frame sizes reach, a module scan waits for the
// next stack): it must not wait, since the forking thread may hold what its caller needs.
//
// The wait is bounded: a section is a few microseconds of work, but a program that forks from
// a dl_iterate_phdr() callback of its own holds the lock that a section waits for. If the
// sections were not all left in time, the child does no such work at all: it records the
// frames that frame sizes reach, and its stacks' modules as they were at the fork.
//
// The program's own dl_iterate_phdr() calls are counted while under way (the preload exports
// the function). A child forked while one was, in any thread, may have the loader's lock held
// by a thread it does not have, or by its own thread under the parent's thread id (a fork from
// a callback): it does no fenced work either, where its first new stack would otherwise wait
// forever for that lock.
#pragma once

#include <link.h>

#include <cstddef>

namespace leakwrap {

// dl_iterate_phdr() as the program calls it: glibc's, counted while under way.
using LoadedModuleVisitor = int (*)(dl_phdr_info*, std::size_t, void*);
int iterate_loaded_modules(LoadedModuleVisitor visit, void* data);

// True if the section is entered and the work may be done; each one entered is left once.
// Sections nest on a thread; a fork from a signal handler does not wait for its own thread's.
bool enter_fork_fenced_section();
void leave_fork_fenced_section();

// A section for one scope: entered() says whether the work may be done.
class ForkFencedSection {
public:
    ForkFencedSection() : entered_(enter_fork_fenced_section()) {}
    ~ForkFencedSection() {
        if (entered_) leave_fork_fenced_section();
    }
    ForkFencedSection(const ForkFencedSection&) = delete;
    ForkFencedSection& operator=(const ForkFencedSection&) = delete;

    bool entered() const { return entered_; }

private:
    bool entered_;
};

// fork's handlers (lifecycle.cpp): prepare waits for the other threads' sections to end and
// turns new ones away until the fork is over, in the parent and in the child.
void fence_before_fork();
void open_fence_in_parent();
void open_fence_in_child();

}  // namespace leakwrap
