#include "segment_parser.h"

#include "old_layouts.h"
#include "sampling_estimate.h"
#include "segment_bytes.h"
#include "stack_table_reader.h"

#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace leakwrap {
namespace {

namespace layout = leakwrap::layout;
using namespace segment_parsing;

// A grid of cells wider than an hour at the start is no grid of births.
constexpr uint64_t kMaxBirthFloorNs = uint64_t{3600} * 1000000000;
// Site records are read a chunk of whole records at a time (SiteRecordSource): a record size
// taken from a corrupt header must not make a chunk of gigabytes. The writer's are 40 bytes.
constexpr uint32_t kMaxSiteRecordSize = 4096;

// A byte range [offset, offset + size) of the segment that a part of it claims for itself.
struct Region {
    const char* name;
    uint64_t offset;
    uint64_t size;
};

void check_region(const Region& region, uint64_t header_size, uint64_t segment_size) {
    if (region.size == 0) return;
    if (region.offset < header_size)
        fail(std::string(region.name) + " at offset " + number(region.offset) + " overlaps the header (" +
             number(header_size) + " bytes)");
    if (region.offset > segment_size || region.size > segment_size - region.offset)
        fail(std::string(region.name) + " [" + number(region.offset) + ", +" + number(region.size) +
             ") lies outside the " + number(segment_size) + "-byte segment");
}

void check_disjoint(const Region& a, const Region& b) {
    if (a.size == 0 || b.size == 0) return;
    if (a.offset < b.offset + b.size && b.offset < a.offset + a.size) fail(std::string(a.name) + " overlaps " + b.name);
}

// Adds `more` to `sum`; returns the name of the first counter that overflowed, or nullptr.
// Cheap enough for every delta entry: no message is built unless a sum overflows.
const char* add_checked(Counters& sum, const Counters& more) {
    if (__builtin_add_overflow(sum.allocs, more.allocs, &sum.allocs)) return "allocations";
    if (__builtin_add_overflow(sum.frees, more.frees, &sum.frees)) return "frees";
    if (__builtin_add_overflow(sum.alloc_bytes, more.alloc_bytes, &sum.alloc_bytes)) return "allocated bytes";
    if (__builtin_add_overflow(sum.free_bytes, more.free_bytes, &sum.free_bytes)) return "freed bytes";
    return nullptr;
}

layout::Header parse_header(std::span<const std::byte> bytes) {
    constexpr auto kVersionEnd = offsetof(layout::Header, layout_version) + sizeof(uint32_t);
    if (bytes.size() < kVersionEnd)
        fail("segment is " + number(bytes.size()) + " bytes, too small to be a leakwrap segment");
    if (std::memcmp(bytes.data(), layout::kMagic, sizeof(layout::kMagic)) != 0)
        fail("bad magic: not a leakwrap segment");
    const auto version = load<uint32_t>(bytes, offsetof(layout::Header, layout_version));
    // Policy (segment_layout.h): the current layout and the previous one are parsed; say why
    // not for others.
    if (version < layout::kOldestReadableVersion)
        fail("segment layout version " + number(version) +
             " was written by an older "
             "libleakwrap.so (this reader reads versions " +
             number(layout::kOldestReadableVersion) + " to " + number(layout::kLayoutVersion) +
             ", whose size-class bins are kept shard-major): read it with the "
             "leakwrap-report of the libleakwrap.so that wrote it");
    if (version > layout::kLayoutVersion)
        fail("segment layout version " + number(version) + ", this reader understands " +
             number(layout::kLayoutVersion) + ": read it with the leakwrap-report of the libleakwrap.so that wrote it");
    if (bytes.size() < sizeof(layout::Header))
        fail("segment truncated: " + number(bytes.size()) + " bytes, the header alone needs " +
             number(sizeof(layout::Header)));

    auto header = load<layout::Header>(bytes, 0);
    // Until the writer publishes the header, its other fields may be half-written.
    if (header.state != layout::kReady)
        fail("segment header is not ready (state " + number(header.state) +
             "): the writer has not finished creating it");
    const uint32_t expected_header_size = header_size_of_layout(version);
    if (header.header_size != expected_header_size)
        fail("header_size " + number(header.header_size) + " does not match layout version " + number(version) + " (" +
             number(expected_header_size) + " bytes)");
    translate_old_header(header);
    if (header.allocator_stats_offset != 0 &&
        (header.allocator_stats_offset < header.header_size ||
         header.allocator_stats_offset % alignof(layout::AllocatorStatistics) != 0 ||
         header.allocator_stats_offset > bytes.size() ||
         bytes.size() - header.allocator_stats_offset < sizeof(layout::AllocatorStatistics)))
        fail("allocator_stats_offset " + number(header.allocator_stats_offset) +
             " is not an aligned place after the header with room for the allocator's statistics");
    if (header.birth_cells > layout::kMaxBirthCells)
        fail("birth_cells " + number(header.birth_cells) + " exceeds the limit of " + number(layout::kMaxBirthCells));
    if (header.birth_cells != 0 && (header.birth_floor_ns == 0 || header.birth_floor_ns > kMaxBirthFloorNs))
        fail("birth_floor_ns " + number(header.birth_floor_ns) + " is outside [1, " + number(kMaxBirthFloorNs) + "]");
    if (header.segment_size != bytes.size())
        fail("segment_size says " + number(header.segment_size) + " bytes but there are " + number(bytes.size()));
    if (header.max_depth > layout::kMaxDepth)
        fail("max_depth " + number(header.max_depth) + " exceeds the limit of " + number(layout::kMaxDepth));
    if (header.max_ruby_depth > layout::kMaxRubyDepth)
        fail("max_ruby_depth " + number(header.max_ruby_depth) + " exceeds the limit of " +
             number(layout::kMaxRubyDepth));
    if (header.stacks_capacity > layout::kMaxStackTableBytes)
        fail("stacks_capacity " + number(header.stacks_capacity) + " exceeds the limit of " +
             number(layout::kMaxStackTableBytes));
    // The overflow sites of every size class come first; a table without them is no segment.
    if (header.site_capacity < layout::kMinSiteCapacity || header.site_capacity > layout::kMaxSiteCapacity)
        fail("site_capacity " + number(header.site_capacity) + " is outside [" + number(layout::kMinSiteCapacity) +
             ", " + number(layout::kMaxSiteCapacity) + "]");
    if (header.site_record_size < sizeof(layout::SiteRecord) || header.site_record_size > kMaxSiteRecordSize)
        fail("site_record_size " + number(header.site_record_size) + " is outside [" +
             number(sizeof(layout::SiteRecord)) + ", " + number(kMaxSiteRecordSize) + "]");
    if (header.module_record_size < sizeof(layout::ModuleRecord))
        fail("module_record_size " + number(header.module_record_size) + " is below " +
             number(sizeof(layout::ModuleRecord)));
    if (header.bin_shards < 1 || header.bin_shards > kMaxBinShards)
        fail("bin_shards " + number(header.bin_shards) + " is outside [1, " + number(kMaxBinShards) + "]");
    // 0: no delta table (its offset is then never used).
    if (header.site_delta_slots > kMaxSiteDeltaSlots)
        fail("site_delta_slots " + number(header.site_delta_slots) + " exceeds the limit of " +
             number(kMaxSiteDeltaSlots));
    if ((header.site_delta_slots & (header.site_delta_slots - 1)) != 0)
        fail("site_delta_slots " + number(header.site_delta_slots) + " is not a power of two (nor 0)");
    if (header.bin_shards_backed >= header.bin_shards && header.layout_version >= 13)
        fail("bin_shards_backed " + number(header.bin_shards_backed) + " is not below bin_shards " +
             number(header.bin_shards) + " (the last shard is backed apart)");
    if ((header.flags & ~layout::kBinsSampled) != 0)
        fail("header flags " + number(header.flags) + " name flags this reader does not know");
    if ((header.flags & layout::kBinsSampled) != 0 && header.sample_interval == 0)
        fail("header flags say the bins count sampled blocks, but the segment is in exact mode");

    // 32-bit counts times 32-bit sizes cannot overflow 64 bits.
    const Region sites{"site table", header.sites_offset, uint64_t{header.site_capacity} * header.site_record_size};
    const Region stacks{"stack table", header.stacks_offset, header.stacks_capacity};
    const Region modules{"module table", header.modules_offset,
                         uint64_t{header.module_capacity} * header.module_record_size};
    const Region strings{"string pool", header.strings_offset, header.strings_capacity};
    const Region bins{"bin table", header.bins_offset,
                      uint64_t{layout::kSizeClassCount} * header.bin_shards * sizeof(layout::BinCounters)};
    // Both factors are bounded above, so this cannot overflow either.
    const Region deltas{"site delta table", header.site_deltas_offset,
                        uint64_t{header.bin_shards} * header.site_delta_slots * sizeof(layout::SiteDelta)};
    const Region regions[] = {sites, stacks, modules, strings, bins, deltas};
    for (const auto& region : regions) check_region(region, header.header_size, header.segment_size);
    for (size_t i = 0; i < std::size(regions); ++i)
        for (size_t j = i + 1; j < std::size(regions); ++j) check_disjoint(regions[i], regions[j]);
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
        const auto record =
            load<layout::ModuleRecord>(bytes, header.modules_offset + uint64_t{slot} * header.module_record_size);
        if (record.state != layout::kReady) continue;
        const std::string owner = "module " + number(slot);
        if (record.build_id_length > layout::kBuildIdMax)
            fail(owner + " has a build-id of " + number(record.build_id_length) + " bytes, more than " +
                 number(layout::kBuildIdMax));
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
// The site records in slot order, a chunk of whole records at a time, from the bytes parsed or
// from `streamed` (see SiteRecordSource).
class SiteRecordChunks {
public:
    SiteRecordChunks(std::span<const std::byte> bytes, const layout::Header& header, const SiteRecordSource* streamed)
        : bytes_(bytes),
          header_(header),
          streamed_(streamed),
          count_(std::min(header.sites_claimed, header.site_capacity)) {}

    uint32_t count() const { return count_; }

    // Calls visit(slot, record) for every record; `done_with`, if set, is given the records of
    // the bytes parsed behind the visit, a megabyte at a time.
    template <class Visit>
    void for_each(const Visit& visit, const DoneWithBytes& done_with = {}) const {
        const uint64_t record_size = header_.site_record_size;
        const auto visit_chunk = [&](uint32_t first_slot, std::span<const std::byte> records) {
            const uint64_t in_chunk = records.size() / record_size;
            for (uint64_t i = 0; i < in_chunk; ++i)
                visit(first_slot + static_cast<uint32_t>(i), load<layout::SiteRecord>(records, i * record_size));
        };
        if (streamed_ != nullptr) {
            streamed_->read(header_.sites_offset, record_size, count_, visit_chunk);
            return;
        }
        for_each_record_chunk(count_, record_size, kChunkBytes, [&](uint32_t first, uint32_t slots) {
            const auto records =
                bytes_.subspan(header_.sites_offset + uint64_t{first} * record_size, uint64_t{slots} * record_size);
            visit_chunk(first, records);
            if (done_with) done_with(records);
        });
    }

private:
    static constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

    std::span<const std::byte> bytes_;
    const layout::Header& header_;
    const SiteRecordSource* streamed_;
    uint32_t count_;
};

// In two passes over the records. The first checks them and marks the stacks they name, checks
// those and makes their store, so that the stack table is given back before any site is made;
// the second makes the sites. Only records ready in the first pass are made sites: their stacks
// were ready before the stack table was read, and a live writer adds sites all the time. A
// streamed segment's site table is never copied whole: made from a copy of it, the parse of the
// Rails example peaked with the 4.9 MiB of that copy, its stack table and the store of its stacks
// at once, and `--by ruby` took 14.0 MiB; now the parse peaks at what it makes, 12.5 MiB with
// the reader's code, and `--by ruby` takes 13.0.
// Room for the sites of records that become ready while a live segment is read (SiteRecordSource::
// late_records), a few kilobytes; more are made by growing the vector.
constexpr std::size_t kRoomForLateSites = 256;

std::vector<Site> parse_sites(std::span<const std::byte> bytes, const layout::Header& header, const StringPool& strings,
                              const SiteRecordSource* streamed, std::vector<std::shared_ptr<const StackStore>>& stores,
                              const DoneWithBytes& done_with, std::vector<uint32_t>& ready_only_later) {
    const SiteRecordChunks records(bytes, header, streamed);
    // Whether the record names a stack; throws if it is not a record the writer makes.
    const auto check_record = [&header](uint32_t slot, const layout::SiteRecord& record) {
        const auto owner = [&] { return "site " + number(slot); };
        if (record.size_class >= layout::kSizeClassCount)
            fail(owner() + " has size class " + number(record.size_class) + ", there are " +
                 number(layout::kSizeClassCount));
        if (record.birth_cell >= std::max(header.birth_cells, 1u))
            fail(owner() + " has birth cell " + number(record.birth_cell) + ", there are " +
                 number(header.birth_cells));
        const bool overflow = layout::is_overflow_site(slot);
        if (overflow && (record.stack != layout::kNoStack || record.size_class != slot || record.birth_cell != 0))
            fail("overflow " + owner() + " must have no stack, size class " + number(slot) +
                 " and birth cell 0, has stack " + number(record.stack) + ", size class " + number(record.size_class) +
                 " and birth cell " + number(record.birth_cell));
        if (!overflow && record.stack == layout::kNoStack) fail(owner() + " has no stack");
        return !overflow;
    };

    StackTableReader stacks(bytes, header, strings);
    std::vector<bool> ready_when_named(records.count());
    std::size_t ready = 0;
    records.for_each([&](uint32_t slot, const layout::SiteRecord& record) {
        if (record.state != layout::kReady) return;
        ready_when_named[slot] = true;
        ++ready;
        if (check_record(slot, record)) stacks.name(record.stack, [&] { return "site " + number(slot); });
    });
    if (streamed != nullptr) streamed->after_names();
    stacks.check_named([&](uint32_t reference) {  // for a message: read the records once more
        std::optional<uint32_t> first;
        records.for_each([&](uint32_t slot, const layout::SiteRecord& record) {
            if (!first && ready_when_named[slot] && !layout::is_overflow_site(slot) && record.stack == reference)
                first = slot;
        });
        return "site " + number(first.value_or(records.count()));
    });
    const std::shared_ptr<const StackStore> store = stacks.store(done_with);
    if (done_with) done_with(bytes.subspan(header.stacks_offset, std::min(header.stacks_used, header.stacks_capacity)));

    // Once, at its size and room for the records that become ready meanwhile: grown by doubling,
    // it took twice that for a moment.
    std::vector<Site> sites;
    sites.reserve(ready + (streamed != nullptr ? kRoomForLateSites : 0));
    // A record ready only now is made a site if the stacks read hold its stack (a new birth cell
    // of a known call site, mostly); checked again, since it is read again.
    const auto make_site = [&](uint32_t slot, const layout::SiteRecord& record) {
        if (record.state != layout::kReady) return;
        const bool overflow = !check_record(slot, record);
        const uint32_t stack = overflow ? StackTableReader::kNotReady : stacks.index(record.stack);
        if (!overflow && stack == StackTableReader::kNotReady) return;  // its stack was not ready
        if (slot >= ready_when_named.size() || !ready_when_named[slot]) ready_only_later.push_back(slot);
        Site& site = sites.emplace_back();
        site.id = slot;
        site.set_key(overflow ? nullptr : &store->stacks[stack], record.size_class, record.birth_cell, overflow);
        site.set_counters({record.allocs, record.frees, record.alloc_bytes, record.free_bytes});
    };
    records.for_each(make_site, done_with);
    if (streamed != nullptr) {
        streamed->after_sites();
        const std::span<const std::byte> late =
            streamed->late_records ? streamed->late_records() : std::span<const std::byte>{};
        const uint64_t late_count = late.size() / header.site_record_size;
        for (uint64_t i = 0; i < late_count; ++i)
            make_site(records.count() + static_cast<uint32_t>(i),
                      load<layout::SiteRecord>(late, i * header.site_record_size));
    }
    stores.push_back(store);
    return sites;
}

Counters checked_sum(const Counters& a, const Counters& b) {
    Counters sum = a;
    if (const char* counter = add_checked(sum, b)) fail(std::string("total ") + counter + " overflows 64 bits");
    return sum;
}

// A site's counts are its record's plus those of every delta entry naming it (each writer thread
// counts in its own shard's entries and moves them into the record now and then). An entry may
// name a slot that was claimed after this copy read sites_claimed, or one not ready yet: a live
// writer's benign race, not corruption, so such entries are ignored like the slots themselves.
// An entry naming a late record (one read after the entries, SiteRecordSource::late_records)
// that moved before that record was read may have moved its counts into it: it is left out.
void add_site_deltas(std::span<const std::byte> bytes, const layout::Header& header, const SiteRecordSource* streamed,
                     std::vector<Site>& sites) {
    if (header.site_delta_slots == 0 || sites.empty()) return;
    const uint32_t first_late = std::min(header.sites_claimed, header.site_capacity);
    static const std::vector<DeltaMark> kNoMarks;
    const std::vector<DeltaMark>& after_late =
        streamed != nullptr && streamed->deltas_after_late_records ? streamed->deltas_after_late_records() : kNoMarks;
    const uint64_t entries = uint64_t{header.bin_shards} * header.site_delta_slots;
    for (uint64_t entry = 0; entry < entries; ++entry) {
        const auto delta =
            load<layout::SiteDelta>(bytes, header.site_deltas_offset + entry * sizeof(layout::SiteDelta));
        if (delta.site == layout::kNoDeltaSite) continue;
        // Found by id in the sites (slot order, with gaps where slots were not ready): a table of
        // every slot's position took 500 KiB at the parse's peak, for the writer's 16,384 entries.
        const auto site = std::lower_bound(sites.begin(), sites.end(), delta.site,
                                           [](const Site& record, uint32_t id) { return record.id < id; });
        if (site == sites.end() || site->id != delta.site) continue;
        if (delta.site >= first_late && (entry >= after_late.size() || after_late[entry].site != delta.site ||
                                         after_late[entry].moves != delta.moves))
            continue;
        Counters counters = site->counters();
        if (const char* counter =
                add_checked(counters, {delta.allocs, delta.frees, delta.alloc_bytes, delta.free_bytes}))
            fail("site " + number(delta.site) + " " + counter + " overflow 64 bits with delta entry " + number(entry) +
                 " added");
        site->set_counters(counters);
    }
}

// Shards exist only so that writer threads do not contend; a class's counts are their sum.
std::vector<Counters> parse_bins(std::span<const std::byte> bytes, const layout::Header& header) {
    std::vector<Counters> bins(layout::kSizeClassCount);
    for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class)
        for (uint32_t shard = 0; shard < header.bin_shards; ++shard) {
            const auto bin = load<layout::BinCounters>(
                bytes, header.bins_offset + layout::bin_index(size_class, shard) * sizeof(layout::BinCounters));
            bins[size_class] = checked_sum(bins[size_class], {bin.allocs, bin.frees, bin.alloc_bytes, bin.free_bytes});
        }
    return bins;
}

bool impossible(const Counters& counters) {
    return counters.frees > counters.allocs || counters.free_bytes > counters.alloc_bytes;
}

// The sites whose counts a delta entry may have moved into their record while a live copy read
// the records (R10): theirs may be short by what was in transit. An entry seen moving (named
// kNoDeltaSite) before the records were read, that moved on by the end, hides which site it
// moved: then any may be short, and there is no set to give.
std::optional<std::unordered_set<uint32_t>> sites_in_transit(std::span<const std::byte> bytes,
                                                             const layout::Header& header,
                                                             const SiteRecordSource* streamed) {
    std::unordered_set<uint32_t> sites;
    if (streamed == nullptr || !streamed->deltas_before_sites) return sites;
    const std::vector<DeltaMark>& before = streamed->deltas_before_sites();
    const uint64_t entries = std::min<uint64_t>(before.size(), uint64_t{header.bin_shards} * header.site_delta_slots);
    for (uint64_t entry = 0; entry < entries; ++entry) {
        const auto after =
            load<layout::SiteDelta>(bytes, header.site_deltas_offset + entry * sizeof(layout::SiteDelta));
        const bool moving_before = before[entry].site == layout::kNoDeltaSite;
        if (after.moves == before[entry].moves && (moving_before || after.site != layout::kNoDeltaSite))
            continue;  // not moved meanwhile (an entry a forked child emptied stays so)
        if (moving_before) return std::nullopt;
        sites.insert(before[entry].site);
    }
    return sites;
}

// Judged by call site, (stack, size class), over its birth cells: a record of a cell that is
// over gets no more allocations while its blocks are still freed, so it holds few live blocks.
// A site whose counts were in transit during a live copy is not judged: the copy may have
// missed its allocations (R10), and the copy is not wrong for that. One that looks impossible is
// counted again from the live segment (SiteRecordSource::recount), and judged by those counts.
void flag_impossible_sites(Snapshot& snapshot, const std::optional<std::unordered_set<uint32_t>>& in_transit,
                           const SiteRecordSource* streamed) {
    if (!in_transit) return;
    struct Suspect {
        Counters sum;
        bool in_transit = false;
        std::vector<std::size_t> members;  // indexes in snapshot.sites
    };
    std::unordered_map<uint64_t, Suspect> suspects;
    for (const Site& site : snapshot.sites)
        if (impossible(site.counters())) suspects.emplace(site.key_without_birth(), Suspect{});
    if (suspects.empty()) return;
    for (std::size_t i = 0; i < snapshot.sites.size(); ++i) {
        const Site& site = snapshot.sites[i];
        if (const auto found = suspects.find(site.key_without_birth()); found != suspects.end()) {
            found->second.sum += site.counters();
            found->second.in_transit = found->second.in_transit || in_transit->contains(site.id);
            found->second.members.push_back(i);
        }
    }
    for (auto& [key, suspect] : suspects) {
        if (suspect.in_transit || !impossible(suspect.sum) || streamed == nullptr || !streamed->recount) continue;
        std::vector<uint32_t> slots;
        for (const std::size_t member : suspect.members) slots.push_back(snapshot.sites[member].id);
        const auto counts = streamed->recount(slots);
        if (!counts) {
            suspect.in_transit = true;
            continue;
        }
        suspect.sum = {};
        for (std::size_t i = 0; i < slots.size(); ++i) {
            snapshot.sites[suspect.members[i]].set_counters((*counts)[i]);
            suspect.sum += (*counts)[i];
        }
    }
    for (const Site& site : snapshot.sites) {
        if (!impossible(site.counters())) continue;  // the group's sum is impossible only with one that is
        const auto found = suspects.find(site.key_without_birth());
        if (found == suspects.end() || found->second.in_transit || !impossible(found->second.sum)) continue;
        if (snapshot.impossible_sites++ == 0) snapshot.first_impossible_site = site.id;
        suspects.erase(found);  // each (stack, size class) once
    }
}

// None before the writer's first reading, nor when its copy caught the writer rewriting them
// (R11: a process killed meanwhile leaves them so).
std::optional<layout::AllocatorStatistics> parse_allocator_statistics(std::span<const std::byte> bytes,
                                                                      const layout::Header& header) {
    if (header.allocator_stats_offset == 0) return std::nullopt;
    const auto statistics = load<layout::AllocatorStatistics>(bytes, header.allocator_stats_offset);
    if (statistics.sequence % 2 != 0 || statistics.allocator == layout::kAllocatorNotRead) return std::nullopt;
    if (statistics.allocator > layout::kAllocatorJemalloc)
        fail("the allocator's statistics name allocator " + number(statistics.allocator) + ", there are " +
             number(layout::kAllocatorJemalloc));
    if (statistics.arenas > layout::kMaxArenaStatistics || statistics.arenas > statistics.arenas_total)
        fail("the allocator's statistics list " + number(statistics.arenas) + " arenas of " +
             number(statistics.arenas_total) + ", at most " + number(layout::kMaxArenaStatistics));
    return statistics;
}

Counters sum_bins(const std::vector<Counters>& bins) {
    Counters totals;
    for (const auto& bin : bins) totals = checked_sum(totals, bin);
    return totals;
}

// kBinsSampled: the writer counted the sampled blocks only in the bins, as at the sites. Each bin
// is estimated as a site is, and the blocks counted at the allocator's reading in the proportion
// of the totals, which they were a part of.
void estimate_sampled_bins(Snapshot& snapshot) {
    const Counters sampled = snapshot.totals;
    for (Counters& bin : snapshot.bins) bin = estimated_counters(bin, snapshot.sample_interval);
    snapshot.totals = sum_bins(snapshot.bins);
    snapshot.bins_estimated = true;
    if (snapshot.counted_at_allocator_reading)
        *snapshot.counted_at_allocator_reading =
            in_proportion(*snapshot.counted_at_allocator_reading, sampled, snapshot.totals);
}

}  // namespace

Snapshot parse_segment(std::span<const std::byte> bytes, const DoneWithBytes& done_with,
                       const SiteRecordSource* streamed) {
    const auto header = parse_header(bytes);
    // An empty pool's offset is never checked, so it must not be used to slice.
    const StringPool strings(header.strings_capacity == 0
                                 ? std::span<const std::byte>{}
                                 : bytes.subspan(header.strings_offset, header.strings_capacity));

    Snapshot snapshot;
    // First: a streamed segment's other parts are copied after its site records are read.
    std::vector<uint32_t> ready_only_later;
    snapshot.sites = parse_sites(bytes, header, strings, streamed, snapshot.stack_stores, done_with, ready_only_later);
    snapshot.pid = header.pid;
    snapshot.parent_pid = header.parent_pid;
    snapshot.start_time_ticks = header.start_time_ticks;
    snapshot.created_unix_ns = header.created_unix_ns;
    snapshot.boot_id = boot_id_text(header.boot_id);
    snapshot.exe = strings.get(header.exe_path, "exe path");
    snapshot.command_line = strings.get(header.command_line, "command line");
    snapshot.max_depth = header.max_depth;
    snapshot.max_ruby_depth = header.max_ruby_depth;
    snapshot.site_capacity = header.site_capacity;
    snapshot.sites_claimed = header.sites_claimed;
    snapshot.stacks_capacity = header.stacks_capacity;
    snapshot.stacks_used = header.stacks_used;
    snapshot.lost_sites = header.lost_sites;
    snapshot.reduced_stacks = header.reduced_stacks;
    snapshot.process_state = header.process_state;
    snapshot.sample_interval = header.sample_interval;
    snapshot.writer_private_bytes = uint64_t{header.private_kib} * 1024;
    if (header.birth_cells != 0)
        snapshot.births = BirthGrid{header.birth_origin_boot_ns, header.birth_floor_ns, header.birth_cells};
    snapshot.modules = parse_modules(bytes, header, strings);
    snapshot.allocator_statistics = parse_allocator_statistics(bytes, header);
    if (snapshot.allocator_statistics) {
        const layout::BlockTotals& counted = snapshot.allocator_statistics->counted;
        snapshot.counted_at_allocator_reading =
            Counters{counted.allocs, counted.frees, counted.alloc_bytes, counted.free_bytes};
    }
    leave_out_what_old_layouts_lack(header.layout_version, snapshot);
    add_site_deltas(bytes, header, streamed, snapshot.sites);
    // A record that became ready while the copy was taken got its counts from entries that
    // named it only since the marks were taken: any of them may be short, as in transit.
    auto in_transit = sites_in_transit(bytes, header, streamed);
    if (in_transit) in_transit->insert(ready_only_later.begin(), ready_only_later.end());
    if (done_with)
        done_with(bytes.subspan(header.site_deltas_offset,
                                uint64_t{header.bin_shards} * header.site_delta_slots * sizeof(layout::SiteDelta)));
    flag_impossible_sites(snapshot, in_transit, streamed);
    snapshot.bins = parse_bins(bytes, header);
    snapshot.totals = sum_bins(snapshot.bins);
    if ((header.flags & layout::kBinsSampled) != 0) estimate_sampled_bins(snapshot);
    return snapshot;
}

}  // namespace leakwrap
