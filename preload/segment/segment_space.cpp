#include "segment.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "bins.h"
#include "debug_check.h"
#include "guard.h"
#include "os.h"
#include "segment_internals.h"

namespace leakwrap {
namespace {

using layout::Header;

// tmpfs pages are reserved in chunks of this many bytes as the tables fill.
constexpr uint64_t kReserveChunk = 64 * 1024;

// Per table, everything below the mark is backed: sites (and what precedes them), stacks,
// modules, strings.
enum Table { kSitesTable, kStacksTable, kModulesTable, kStringsTable, kTables };
constinit std::atomic<uint64_t> g_reserved_until[kTables]{};
constinit Geometry g_geometry{};
constinit int g_segment_fd = -1;

// Which reservation mark covers a segment offset.
Table table_of(uint64_t offset) {
    const Geometry& g = g_geometry;
    return offset >= g.strings_offset   ? kStringsTable
           : offset >= g.modules_offset ? kModulesTable
           : offset >= g.stacks_offset  ? kStacksTable
                                        : kSitesTable;
}

uint64_t table_end(Table table) {
    const Geometry& g = g_geometry;
    switch (table) {
        case kSitesTable: return g.stacks_offset;
        case kStacksTable: return g.modules_offset;
        case kModulesTable: return g.strings_offset;
        default: return g.size;
    }
}

}  // namespace

bool reserve_segment_bytes(uint64_t offset, uint64_t length) {
    LEAKWRAP_CHECK(inside_leakwrap());
    Table table = table_of(offset);
    // Invariant: everything of the table below `reserved` is backed. Each reservation starts at
    // the mark it read, so concurrent claimers can never leave a hole below the new mark.
    std::atomic<uint64_t>& reserved = g_reserved_until[table];
    uint64_t needed_end = offset + length;
    uint64_t mark = reserved.load(std::memory_order_acquire);
    if (needed_end <= mark) return true;
    uint64_t chunk_end = std::min(align_up(needed_end, kReserveChunk), table_end(table));
    if (needed_end > chunk_end || !os::back_segment_bytes(g_segment_fd, mark, chunk_end - mark)) return false;
    while (mark < chunk_end && !reserved.compare_exchange_weak(mark, chunk_end)) {
    }
    return true;
}

bool back_shard_range(uint32_t first, uint32_t end) {
    const Geometry& g = g_geometry;
    return os::back_segment_bytes(g_segment_fd, g.bins_offset + first * kShardBinBytes,
                                  (end - first) * kShardBinBytes) &&
           os::back_segment_bytes(g_segment_fd, g.site_deltas_offset + first * kShardDeltaBytes,
                                  (end - first) * kShardDeltaBytes);
}

bool back_bin_shards(uint32_t shard_end) {
    LEAKWRAP_CHECK(shard_end <= kSharedBinShard);
    // As the tables' marks: each backing starts at the mark it read, so the shards below the
    // mark are backed whoever moved it.
    std::atomic_ref<uint32_t> backed(g_segment.header->bin_shards_backed);
    uint32_t mark = backed.load(std::memory_order_acquire);
    if (shard_end <= mark) return true;
    if (!back_shard_range(mark, shard_end)) return false;
    while (mark < shard_end && !backed.compare_exchange_weak(mark, shard_end, std::memory_order_release)) {
    }
    return true;
}

bool intern_string(const char* text, std::size_t length, layout::StringRef* out) {
    Header* h = g_segment.header;
    std::atomic_ref<uint32_t> used(h->strings_used);
    uint32_t offset = used.load(std::memory_order_relaxed);
    std::size_t with_nul = length + 1;
    do {
        if (with_nul > h->strings_capacity - offset) return false;
    } while (!used.compare_exchange_weak(offset, offset + static_cast<uint32_t>(with_nul)));
    if (!reserve_segment_bytes(h->strings_offset + offset, with_nul)) return false;
    std::byte* target = g_segment.base + h->strings_offset + offset;
    std::memcpy(target, text, length);
    target[length] = std::byte{0};
    *out = layout::StringRef{offset, static_cast<uint32_t>(length)};
    return true;
}

uint64_t claim_stack_bytes(uint64_t bytes) {
    std::atomic_ref<uint64_t> used(g_segment.header->stacks_used);
    uint64_t offset = used.load(std::memory_order_relaxed);
    do {
        if (bytes > g_segment.stacks_capacity - offset) return UINT64_MAX;
    } while (!used.compare_exchange_weak(offset, offset + bytes, std::memory_order_relaxed));
    if (!reserve_segment_bytes(g_geometry.stacks_offset + offset, bytes)) return UINT64_MAX;
    return offset;
}

void start_reservations(const Geometry& g, int segment_fd) {
    g_geometry = g;
    g_segment_fd = segment_fd;
    g_reserved_until[kSitesTable].store(g.sites_offset, std::memory_order_relaxed);
    g_reserved_until[kStacksTable].store(g.stacks_offset, std::memory_order_relaxed);
    g_reserved_until[kModulesTable].store(g.modules_offset, std::memory_order_relaxed);
    g_reserved_until[kStringsTable].store(g.strings_offset, std::memory_order_relaxed);
}

uint64_t backed_until(uint64_t offset) { return g_reserved_until[table_of(offset)].load(std::memory_order_acquire); }

}  // namespace leakwrap
