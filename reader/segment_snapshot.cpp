#include "segment_snapshot.h"

#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace leakwrap {
namespace {

namespace layout = leakwrap::layout;

[[noreturn]] void fail(const std::string& message) { throw SegmentError(message); }

std::string number(uint64_t value) { return std::to_string(value); }

// Callers bounds-check first; memcpy because the copy carries no alignment guarantee.
template <class T>
T load(std::span<const std::byte> bytes, uint64_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

// A byte range [offset, offset + size) of the segment that a part of it claims for itself.
struct Region {
    const char* name;
    uint64_t offset;
    uint64_t size;
};

void check_region(const Region& region, uint64_t header_size, uint64_t segment_size) {
    if (region.size == 0) return;
    if (region.offset < header_size)
        fail(std::string(region.name) + " at offset " + number(region.offset) +
             " overlaps the header (" + number(header_size) + " bytes)");
    if (region.offset > segment_size || region.size > segment_size - region.offset)
        fail(std::string(region.name) + " [" + number(region.offset) + ", +" + number(region.size) +
             ") lies outside the " + number(segment_size) + "-byte segment");
}

void check_disjoint(const Region& a, const Region& b) {
    if (a.size == 0 || b.size == 0) return;
    if (a.offset < b.offset + b.size && b.offset < a.offset + a.size)
        fail(std::string(a.name) + " overlaps " + b.name);
}

uint64_t checked_sum(uint64_t a, uint64_t b, const char* what) {
    uint64_t sum;
    if (__builtin_add_overflow(a, b, &sum))
        fail(std::string("total ") + what + " overflows 64 bits");
    return sum;
}

// The frees of a site can only exceed its allocations in a corrupt segment; clamp rather than
// report a wrapped-around, astronomically large leak.
uint64_t live(uint64_t added, uint64_t removed) { return added > removed ? added - removed : 0; }

class StringPool {
public:
    StringPool(std::span<const std::byte> pool) : pool_(pool) {}

    std::string get(layout::StringRef ref, const std::string& owner) const {
        // Checked against the capacity, not strings_used: a record copied after the header may
        // point at strings handed out after strings_used was read.
        if (ref.offset > pool_.size() || ref.length > pool_.size() - ref.offset)
            fail(owner + " string [" + number(ref.offset) + ", +" + number(ref.length) +
                 ") lies outside the " + number(pool_.size()) + "-byte string pool");
        const auto* begin = reinterpret_cast<const char*>(pool_.data()) + ref.offset;
        return std::string(begin, ref.length);
    }

private:
    std::span<const std::byte> pool_;
};

layout::Header parse_header(std::span<const std::byte> bytes) {
    constexpr auto kVersionEnd = offsetof(layout::Header, layout_version) + sizeof(uint32_t);
    if (bytes.size() < kVersionEnd)
        fail("segment is " + number(bytes.size()) + " bytes, too small to be a leakwrap segment");
    if (std::memcmp(bytes.data(), layout::kMagic, sizeof(layout::kMagic)) != 0)
        fail("bad magic: not a leakwrap segment");
    const auto version = load<uint32_t>(bytes, offsetof(layout::Header, layout_version));
    if (version != layout::kLayoutVersion)
        fail("segment layout version " + number(version) + ", this reader understands " +
             number(layout::kLayoutVersion));
    if (bytes.size() < sizeof(layout::Header))
        fail("segment truncated: " + number(bytes.size()) + " bytes, the header alone needs " +
             number(sizeof(layout::Header)));

    const auto header = load<layout::Header>(bytes, 0);
    // Until the writer publishes the header, its other fields may be half-written.
    if (header.state != layout::kReady)
        fail("segment header is not ready (state " + number(header.state) +
             "): the writer has not finished creating it");
    if (header.header_size != sizeof(layout::Header))
        fail("header_size " + number(header.header_size) + " does not match layout version " +
             number(layout::kLayoutVersion) + " (" + number(sizeof(layout::Header)) + " bytes)");
    if (header.segment_size != bytes.size())
        fail("segment_size says " + number(header.segment_size) + " bytes but there are " +
             number(bytes.size()));
    if (header.max_depth > layout::kMaxDepth)
        fail("max_depth " + number(header.max_depth) + " exceeds the limit of " +
             number(layout::kMaxDepth));
    if (header.site_capacity == 0 || header.site_capacity > layout::kMaxSiteCapacity)
        fail("site_capacity " + number(header.site_capacity) + " is outside [1, " +
             number(layout::kMaxSiteCapacity) + "]");
    const uint64_t min_site_record = layout::kFramesOffsetInSite + 8ull * header.max_depth;
    if (header.site_record_size < min_site_record)
        fail("site_record_size " + number(header.site_record_size) + " is below the " +
             number(min_site_record) + " bytes a site with " + number(header.max_depth) +
             " frames needs");
    if (header.module_record_size < sizeof(layout::ModuleRecord))
        fail("module_record_size " + number(header.module_record_size) + " is below " +
             number(sizeof(layout::ModuleRecord)));

    // 32-bit counts times 32-bit sizes cannot overflow 64 bits.
    const Region sites{"site table", header.sites_offset,
                       uint64_t{header.site_capacity} * header.site_record_size};
    const Region modules{"module table", header.modules_offset,
                         uint64_t{header.module_capacity} * header.module_record_size};
    const Region strings{"string pool", header.strings_offset, header.strings_capacity};
    for (const auto& region : {sites, modules, strings})
        check_region(region, header.header_size, header.segment_size);
    check_disjoint(sites, modules);
    check_disjoint(sites, strings);
    check_disjoint(modules, strings);
    return header;
}

std::string boot_id_text(const char (&field)[40]) {
    const std::string_view text(field, sizeof(field));
    return std::string(text.substr(0, text.find('\0')));
}

std::vector<Module> parse_modules(std::span<const std::byte> bytes, const layout::Header& header,
                                  const StringPool& strings) {
    std::vector<Module> modules;
    const uint32_t count = std::min(header.modules_claimed, header.module_capacity);
    for (uint32_t slot = 0; slot < count; ++slot) {
        const auto record = load<layout::ModuleRecord>(
            bytes, header.modules_offset + uint64_t{slot} * header.module_record_size);
        if (record.state != layout::kReady) continue;
        const std::string owner = "module " + number(slot);
        if (record.build_id_length > layout::kBuildIdMax)
            fail(owner + " has a build-id of " + number(record.build_id_length) +
                 " bytes, more than " + number(layout::kBuildIdMax));
        if (record.start > record.end) fail(owner + " starts after it ends");
        Module module;
        module.path = strings.get(record.path, owner + " path");
        module.load_bias = record.load_bias;
        module.start = record.start;
        module.end = record.end;
        module.load_generation = record.load_generation;
        module.unload_generation = record.unload_generation;
        module.build_id.assign(record.build_id, record.build_id + record.build_id_length);
        modules.push_back(std::move(module));
    }
    return modules;
}

std::vector<Site> parse_sites(std::span<const std::byte> bytes, const layout::Header& header) {
    std::vector<Site> sites;
    const uint32_t count = std::min(header.sites_claimed, header.site_capacity);
    for (uint32_t slot = 0; slot < count; ++slot) {
        const uint64_t at = header.sites_offset + uint64_t{slot} * header.site_record_size;
        const auto record = load<layout::SiteRecord>(bytes, at);
        if (record.state != layout::kReady) continue;
        if (record.depth > header.max_depth)
            fail("site " + number(slot) + " has depth " + number(record.depth) +
                 ", more than max_depth " + number(header.max_depth));
        Site site;
        site.id = slot;
        site.overflow = slot == layout::kOverflowSite;
        site.allocs = record.allocs;
        site.frees = record.frees;
        site.alloc_bytes = record.alloc_bytes;
        site.free_bytes = record.free_bytes;
        site.live_blocks = live(record.allocs, record.frees);
        site.live_bytes = live(record.alloc_bytes, record.free_bytes);
        site.module_generation = record.module_generation;
        // site_record_size was checked to hold max_depth frames after the record.
        site.frames.reserve(record.depth);
        for (uint32_t i = 0; i < record.depth; ++i)
            site.frames.push_back(
                load<uint64_t>(bytes, at + layout::kFramesOffsetInSite + i * sizeof(uint64_t)));
        sites.push_back(std::move(site));
    }
    return sites;
}

Totals sum_sites(const std::vector<Site>& sites) {
    Totals totals;
    for (const auto& site : sites) {
        totals.live_bytes = checked_sum(totals.live_bytes, site.live_bytes, "live bytes");
        totals.live_blocks = checked_sum(totals.live_blocks, site.live_blocks, "live blocks");
        totals.allocs = checked_sum(totals.allocs, site.allocs, "allocations");
        totals.frees = checked_sum(totals.frees, site.frees, "frees");
        totals.alloc_bytes = checked_sum(totals.alloc_bytes, site.alloc_bytes, "allocated bytes");
        totals.free_bytes = checked_sum(totals.free_bytes, site.free_bytes, "freed bytes");
    }
    return totals;
}

}  // namespace

Snapshot parse_segment(std::span<const std::byte> bytes) {
    const auto header = parse_header(bytes);
    // An empty pool's offset is never checked, so it must not be used to slice.
    const StringPool strings(header.strings_capacity == 0
                                 ? std::span<const std::byte>{}
                                 : bytes.subspan(header.strings_offset, header.strings_capacity));

    Snapshot snapshot;
    snapshot.pid = header.pid;
    snapshot.parent_pid = header.parent_pid;
    snapshot.start_time_ticks = header.start_time_ticks;
    snapshot.created_unix_ns = header.created_unix_ns;
    snapshot.boot_id = boot_id_text(header.boot_id);
    snapshot.exe = strings.get(header.exe_path, "exe path");
    snapshot.command_line = strings.get(header.command_line, "command line");
    snapshot.max_depth = header.max_depth;
    snapshot.site_capacity = header.site_capacity;
    snapshot.sites_claimed = header.sites_claimed;
    snapshot.lost_sites = header.lost_sites;
    snapshot.process_state = header.process_state;
    snapshot.modules = parse_modules(bytes, header, strings);
    snapshot.sites = parse_sites(bytes, header);
    snapshot.totals = sum_sites(snapshot.sites);
    return snapshot;
}

}  // namespace leakwrap
