#include "allocator_statistics.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "debug_check.h"
#include "guard.h"
#include "os.h"
#include "private_memory.h"
#include "real_allocator.h"
#include "segment.h"

namespace leakwrap {
namespace {

constinit std::atomic<uint64_t> g_next_reading_ns{0};
constinit std::atomic<bool> g_reading{false};

// malloc_info()'s text, in private memory of our own: a few hundred bytes per arena, and a line
// per free-list size in use. Arenas beyond what fits are counted in no arena of their own.
constexpr std::size_t kInfoTextBytes = 256 * 1024;
constinit char* g_info_text = nullptr;
constinit std::atomic<uint64_t> g_info_text_counted{0};

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
constinit Mallctl g_mallctl = nullptr;
constinit bool g_mallctl_looked_up = false;

// What lies in whole pages inside free chunks of glibc's: malloc_trim(0) hands back the pages
// of a chunk that start after its 48-byte list links, so a chunk of s bytes at a random place
// within a page holds s - 48 - 4096 bytes of whole pages on average, none if smaller.
constexpr uint64_t kPage = 4096;
constexpr uint64_t kChunkLinks = 48;
uint64_t whole_pages_in_chunks(uint64_t total, uint64_t count) {
    const uint64_t unusable = count * (kChunkLinks + kPage);
    return total > unusable ? total - unusable : 0;
}
// The top chunk is cut back to its first page (malloc_trim's pad of 0).
uint64_t whole_pages_in_top(uint64_t top) { return top > kPage ? (top - kPage) & ~(kPage - 1) : 0; }

// The number after `name="` in the line at `line`, 0 if there is none.
uint64_t attribute(const char* line, const char* line_end, const char* name) {
    const std::size_t length = std::strlen(name);
    for (const char* at = line; at + length + 2 <= line_end; ++at) {
        if (std::memcmp(at, name, length) != 0 || at[length] != '=' || at[length + 1] != '"') continue;
        uint64_t value = 0;
        for (at += length + 2; at < line_end && *at >= '0' && *at <= '9'; ++at)
            value = value * 10 + uint64_t(*at - '0');
        return value;
    }
    return 0;
}

bool starts_with(const char* line, const char* line_end, const char* prefix) {
    const std::size_t length = std::strlen(prefix);
    return std::size_t(line_end - line) >= length && std::memcmp(line, prefix, length) == 0;
}

// Fills `out` from malloc_info()'s text: an arena per <heap>, whose <size> and <unsorted> lines
// are its free chunks by size (fast bins included), "fast" and "rest" its free memory ("rest"
// counts the top chunk, which no size line does), then the totals over all arenas.
void parse_malloc_info(const char* text, std::size_t length, layout::AllocatorStatistics& out) {
    const char* const end = text + length;
    layout::ArenaStatistics arena{};
    uint64_t bytes_in_sizes = 0, fast_bytes = 0;
    bool in_heap = false;
    for (const char* line = text; line < end;) {
        const char* line_end = static_cast<const char*>(std::memchr(line, '\n', std::size_t(end - line)));
        if (line_end == nullptr) break;  // cut short: the lines after are lost
        while (line < line_end && *line == ' ') ++line;
        if (starts_with(line, line_end, "<heap ")) {
            in_heap = true;
            arena = {};
            bytes_in_sizes = fast_bytes = 0;
        } else if (starts_with(line, line_end, "<size ") || starts_with(line, line_end, "<unsorted ")) {
            const uint64_t total = attribute(line, line_end, "total"), count = attribute(line, line_end, "count");
            bytes_in_sizes += total;
            arena.returnable_bytes += whole_pages_in_chunks(total, count);
        } else if (starts_with(line, line_end, "<total type=\"fast\"")) {
            fast_bytes = attribute(line, line_end, "size");
            if (in_heap) arena.free_chunks += attribute(line, line_end, "count");
        } else if (starts_with(line, line_end, "<total type=\"rest\"")) {
            const uint64_t rest = attribute(line, line_end, "size");
            if (in_heap) {
                arena.free_bytes = fast_bytes + rest;
                arena.free_chunks += attribute(line, line_end, "count");
                // The size lines count the fast chunks and the binned ones; "rest" the binned
                // ones and the top chunk.
                const uint64_t top = fast_bytes + rest > bytes_in_sizes ? fast_bytes + rest - bytes_in_sizes : 0;
                arena.returnable_bytes += whole_pages_in_top(top);
            } else {
                out.free_bytes = fast_bytes + rest;
            }
        } else if (starts_with(line, line_end, "<total type=\"mmap\"")) {
            out.mmapped_bytes = attribute(line, line_end, "size");
        } else if (starts_with(line, line_end, "<system type=\"current\"")) {
            if (in_heap)
                arena.system_bytes = attribute(line, line_end, "size");
            else
                out.system_bytes = attribute(line, line_end, "size");
        } else if (starts_with(line, line_end, "</heap>")) {
            in_heap = false;
            ++out.arenas_total;
            out.returnable_bytes += arena.returnable_bytes;
            if (out.arenas < layout::kMaxArenaStatistics) out.arena[out.arenas++] = arena;
        }
        line = line_end + 1;
    }
    out.in_use_bytes = out.system_bytes > out.free_bytes ? out.system_bytes - out.free_bytes : 0;
    out.in_use_bytes += out.mmapped_bytes;
}

bool read_glibc(layout::AllocatorStatistics& out) {
    if (g_info_text == nullptr) {
        g_info_text = static_cast<char*>(os::map_private(kInfoTextBytes));
        if (g_info_text == nullptr) return false;
    }
    // Its FILE is allocated while the guard is held: by the real allocator, untracked (I1).
    FILE* text = fmemopen(g_info_text, kInfoTextBytes, "w");
    if (text == nullptr) return false;
    malloc_info(0, text);
    const long length = ftell(text);
    fclose(text);
    if (length <= 0) return false;
    const auto written = std::min<std::size_t>(std::size_t(length), kInfoTextBytes);
    count_private_use(g_info_text_counted, (written + kPage - 1) & ~(kPage - 1));
    out.allocator = layout::kAllocatorGlibc;
    parse_malloc_info(g_info_text, written, out);
    return true;
}

uint64_t jemalloc_figure(const char* name) {
    std::size_t value = 0, size = sizeof value;
    return g_mallctl(name, &value, &size, nullptr, 0) == 0 ? value : 0;
}

bool read_jemalloc(layout::AllocatorStatistics& out) {
    if (!g_mallctl_looked_up) {
        g_mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
        g_mallctl_looked_up = true;
    }
    if (g_mallctl == nullptr) return false;
    uint64_t epoch = 1;  // makes jemalloc refresh the figures below
    std::size_t size = sizeof epoch;
    if (g_mallctl("epoch", &epoch, &size, &epoch, size) != 0) return false;
    const uint64_t allocated = jemalloc_figure("stats.allocated"), active = jemalloc_figure("stats.active");
    if (active == 0) return false;  // built without statistics
    out.allocator = layout::kAllocatorJemalloc;
    out.in_use_bytes = allocated;
    out.free_bytes = active > allocated ? active - allocated : 0;
    out.resident_bytes = jemalloc_figure("stats.resident");
    out.metadata_bytes = jemalloc_figure("stats.metadata");
    out.system_bytes = jemalloc_figure("stats.mapped");
    // Resident pages neither active nor metadata: the dirty pages jemalloc's decay hands back.
    const uint64_t accounted = active + out.metadata_bytes;
    out.returnable_bytes = out.resident_bytes > accounted ? out.resident_bytes - accounted : 0;
    unsigned arenas = 0;
    std::size_t arenas_size = sizeof arenas;
    if (g_mallctl("arenas.narenas", &arenas, &arenas_size, nullptr, 0) == 0) out.arenas_total = arenas;
    return true;
}

void publish(layout::AllocatorStatistics* shared, const layout::AllocatorStatistics& reading) {
    std::atomic_ref<uint32_t> sequence(shared->sequence);
    const uint32_t odd = sequence.load(std::memory_order_relaxed) | 1;
    sequence.store(odd, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    std::memcpy(reinterpret_cast<std::byte*>(shared) + sizeof shared->sequence,
                reinterpret_cast<const std::byte*>(&reading) + sizeof reading.sequence,
                sizeof reading - sizeof reading.sequence);
    sequence.store(odd + 1, std::memory_order_release);
}

layout::AllocatorStatistics* shared_statistics() {
    const layout::Header* h = g_segment.header;
    if (h == nullptr || h->allocator_stats_offset == 0) return nullptr;
    return reinterpret_cast<layout::AllocatorStatistics*>(g_segment.base + h->allocator_stats_offset);
}

}  // namespace

void reset_allocator_statistics_in_child() { g_reading.store(false, std::memory_order_relaxed); }

uint64_t read_allocator_statistics_when_due(uint64_t since_origin_ns, layout::BlockTotals (*count_blocks)()) {
    LEAKWRAP_CHECK(inside_leakwrap());  // I1
    uint64_t due = g_next_reading_ns.load(std::memory_order_relaxed);
    if (since_origin_ns < due) return due;
    if (g_reading.exchange(true, std::memory_order_acquire)) return since_origin_ns + kAllocatorStatisticsIntervalNs;
    layout::AllocatorStatistics* shared = shared_statistics();
    uint64_t took = 0;
    if (shared != nullptr) {
        int cancellation = 0;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancellation);  // I8
        const os::SignalMask signals = os::block_signals();             // I4
        const uint64_t start = os::monotonic_nanoseconds();
        static layout::AllocatorStatistics reading;  // one reader at a time (g_reading)
        reading = {};
        reading.counted = count_blocks();
        // Until the real functions are known, so is not the allocator.
        const bool read = g_real_resolved && (g_real_is_glibc ? read_glibc(reading) : read_jemalloc(reading));
        took = os::monotonic_nanoseconds() - start;
        reading.taken_ns = since_origin_ns;
        reading.took_ns = took;
        if (read) publish(shared, reading);
        os::restore_signals(signals);
        pthread_setcancelstate(cancellation, nullptr);
    }
    due = since_origin_ns + std::max(kAllocatorStatisticsIntervalNs, took * kAllocatorStatisticsShare);
    g_next_reading_ns.store(due, std::memory_order_relaxed);
    g_reading.store(false, std::memory_order_release);
    return due;
}

}  // namespace leakwrap
