// The recording half of libleakwrap.so, driven directly: what the interposed malloc and free do
// to the segment (bins, site table, site counters, string pool), callable from a test without
// LD_PRELOAD. Built into libleakwrap_recording.so from the preload's own sources minus the
// interposers (malloc_api.cpp, lifecycle.cpp); see CMakeLists.txt.
#pragma once

#include <leakwrap/segment_layout.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace leakwrap::recording {

struct Options {
    uint32_t depth = 16;        // LEAKWRAP_DEPTH
    uint32_t max_sites = 4096;  // LEAKWRAP_MAX_SITES
};

// Creates /dev/shm/leakwrap.<pid> and the site table as libleakwrap's start-up does (exact mode,
// no fork handlers). Ends a previous recording first; call from one thread, with no other thread
// recording.
bool start(const Options& options);
// Removes the segment's name (the mapping stays, as in the preload).
void stop();
std::string segment_path();

// What libleakwrap's pthread_create wrapper does at the start of every thread: learn the
// thread's stack bounds, without which the call-site cache stays off for the thread.
void enter_thread();

// malloc's bookkeeping for a block of `size` bytes: its bin, its call site (the caller of this
// function, with the caller's stack, just as for the caller of malloc) and the site's counters.
// Returns the site index, which the block header would carry to free().
uint32_t record_allocation(uint64_t size);
// free()'s bookkeeping for that block.
void record_free(uint32_t site, uint64_t size);

// The parent's half of a fork (fork_snapshot.cpp), as fork's prepare handler takes it and its
// parent handler drops it, without forking: the calling thread's copy of the segment, mapped
// until drop_fork_copy(). Threads may take theirs at once, as concurrent forks do.
const std::byte* take_fork_copy();
void drop_fork_copy();

// The string pool (segment.cpp intern_string); false when the pool is full.
bool intern(std::string_view text, layout::StringRef* out);
std::string_view pooled(const layout::StringRef& ref);

// The live segment, read in place (the test compares; the reader reads its own copy).
const layout::Header& header();
const layout::SiteRecord& site(uint32_t index);
const layout::StackRecord& stack_of_site(uint32_t index);
const uint64_t* site_frames(uint32_t index);

}  // namespace leakwrap::recording
