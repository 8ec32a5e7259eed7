// Makes fuzzing seeds of a real segment. A segment is as large as its capacities (megabytes,
// mostly holes); its compact copy keeps only what was claimed, each table right after the
// previous one, the bin shards summed into one and the site delta entries of all shards merged
// into one shard's (at most 64 entries, direct-mapped by site; counts that find
// their entry taken go into the site's record): the same content, parsed the same way, in a few
// kilobytes. With --with-variants, next to it go variants that break one rule each, so the
// fuzzer starts at the parser's every check instead of having to find them.
//
//   compact_segment <segment file> <output directory> <name> [--with-variants | --with-variant=NAME,...]
//
// test/fuzz/make_corpus.sh runs real programs under the preload and calls this on their segments.
#include <leakwrap/segment_layout.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <vector>

namespace {

using namespace leakwrap;
namespace fs = std::filesystem;

uint64_t align64(uint64_t offset) { return (offset + 63) / 64 * 64; }

// Delta entries per shard in a compact segment (the writer keeps more; a few kilobytes is the aim).
constexpr uint32_t kCompactDeltaSlots = 64;

template <class T>
T load(const std::vector<char>& bytes, uint64_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

template <class T>
void store(std::vector<char>& bytes, uint64_t offset, const T& value) {
    std::memcpy(bytes.data() + offset, &value, sizeof value);
}

std::vector<char> compact(const std::vector<char>& segment) {
    auto header = load<layout::Header>(segment, 0);
    const uint32_t sites = std::min(header.sites_claimed, header.site_capacity);
    const uint32_t modules = std::min(header.modules_claimed, header.module_capacity);
    const uint32_t strings = std::min(header.strings_used, header.strings_capacity);
    const uint64_t sites_bytes = uint64_t{sites} * header.site_record_size;
    const uint64_t stacks_bytes = std::min(header.stacks_used, header.stacks_capacity);
    const uint64_t modules_bytes = uint64_t{modules} * header.module_record_size;
    const uint64_t bins_bytes = uint64_t{layout::kSizeClassCount} * sizeof(layout::BinCounters);

    // A table the file does not hold (not a segment of our writer) is left out.
    const uint64_t delta_entries = uint64_t{header.bin_shards} * header.site_delta_slots;
    const bool deltas_present =
        delta_entries != 0 && header.site_deltas_offset <= segment.size() &&
        delta_entries <= (segment.size() - header.site_deltas_offset) / sizeof(layout::SiteDelta);
    const uint32_t delta_slots = deltas_present ? std::min(header.site_delta_slots, kCompactDeltaSlots) : 0;

    layout::Header compacted = header;
    compacted.site_capacity = compacted.sites_claimed = sites;
    compacted.module_capacity = compacted.modules_claimed = modules;
    compacted.strings_capacity = compacted.strings_used = strings;
    compacted.bin_shards = 1;
    compacted.bin_shards_backed = 0;  // its one shard is the last, always read
    const bool statistics = header.allocator_stats_offset != 0 &&
                            segment.size() >= sizeof(layout::AllocatorStatistics) &&
                            header.allocator_stats_offset <= segment.size() - sizeof(layout::AllocatorStatistics);
    compacted.allocator_stats_offset = statistics ? align64(sizeof(layout::Header)) : 0;
    compacted.sites_offset = align64(sizeof(layout::Header) + (statistics ? sizeof(layout::AllocatorStatistics) : 0));
    compacted.stacks_capacity = compacted.stacks_used = stacks_bytes;
    compacted.stacks_offset = align64(compacted.sites_offset + sites_bytes);
    compacted.modules_offset = align64(compacted.stacks_offset + stacks_bytes);
    compacted.strings_offset = align64(compacted.modules_offset + modules_bytes);
    compacted.bins_offset = align64(compacted.strings_offset + strings);
    compacted.site_delta_slots = delta_slots;
    compacted.site_deltas_offset = align64(compacted.bins_offset + bins_bytes);
    compacted.segment_size = compacted.site_deltas_offset + uint64_t{delta_slots} * sizeof(layout::SiteDelta);

    std::vector<char> out(compacted.segment_size);
    store(out, 0, compacted);
    if (statistics)
        std::memcpy(out.data() + compacted.allocator_stats_offset, segment.data() + header.allocator_stats_offset,
                    sizeof(layout::AllocatorStatistics));
    std::memcpy(out.data() + compacted.sites_offset, segment.data() + header.sites_offset, sites_bytes);
    std::memcpy(out.data() + compacted.stacks_offset, segment.data() + header.stacks_offset, stacks_bytes);
    std::memcpy(out.data() + compacted.modules_offset, segment.data() + header.modules_offset, modules_bytes);
    std::memcpy(out.data() + compacted.strings_offset, segment.data() + header.strings_offset, strings);
    for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class) {
        layout::BinCounters sum{};
        for (uint32_t shard = 0; shard < header.bin_shards; ++shard) {
            const auto bin = load<layout::BinCounters>(
                segment, header.bins_offset + layout::bin_index(size_class, shard) * sizeof(layout::BinCounters));
            sum.allocs += bin.allocs;
            sum.frees += bin.frees;
            sum.alloc_bytes += bin.alloc_bytes;
            sum.free_bytes += bin.free_bytes;
        }
        store(out, compacted.bins_offset + uint64_t{size_class} * sizeof sum, sum);
    }

    // The deltas of each kept, ready site, summed over the shards. Entries naming no such site
    // (claimed after the count was taken, not ready yet) count for nothing in the reader either.
    std::map<uint32_t, layout::SiteDelta> delta_of_site;
    for (uint64_t entry = 0; deltas_present && entry < delta_entries; ++entry) {
        const auto delta =
            load<layout::SiteDelta>(segment, header.site_deltas_offset + entry * sizeof(layout::SiteDelta));
        if (delta.site == layout::kNoDeltaSite || delta.site >= sites) continue;
        const auto record =
            load<layout::SiteRecord>(out, compacted.sites_offset + uint64_t{delta.site} * header.site_record_size);
        if (record.state != layout::kReady) continue;
        layout::SiteDelta& sum = delta_of_site.try_emplace(delta.site).first->second;
        sum.site = delta.site;
        sum.allocs += delta.allocs;
        sum.frees += delta.frees;
        sum.alloc_bytes += delta.alloc_bytes;
        sum.free_bytes += delta.free_bytes;
    }
    for (uint32_t slot = 0; slot < delta_slots; ++slot) {
        layout::SiteDelta empty{};
        empty.site = layout::kNoDeltaSite;
        store(out, compacted.site_deltas_offset + uint64_t{slot} * sizeof empty, empty);
    }
    for (const auto& [site, delta] : delta_of_site) {
        const uint64_t entry_at = compacted.site_deltas_offset + uint64_t{site & (delta_slots - 1)} * sizeof delta;
        if (load<layout::SiteDelta>(out, entry_at).site == layout::kNoDeltaSite) {
            store(out, entry_at, delta);
            continue;
        }
        const uint64_t record_at = compacted.sites_offset + uint64_t{site} * header.site_record_size;
        auto record = load<layout::SiteRecord>(out, record_at);
        record.allocs += delta.allocs;
        record.frees += delta.frees;
        record.alloc_bytes += delta.alloc_bytes;
        record.free_bytes += delta.free_bytes;
        store(out, record_at, record);
    }
    return out;
}

// A compact segment with one rule broken (or, for the deltas, bent the way a live writer may).
struct Variant {
    const char* name;
    std::function<void(std::vector<char>&)> change;
    bool needs_delta_table = false;
};

void change_header(std::vector<char>& segment, const std::function<void(layout::Header&)>& change) {
    auto header = load<layout::Header>(segment, 0);
    change(header);
    store(segment, 0, header);
}

void change_last_site(std::vector<char>& segment, const std::function<void(layout::SiteRecord&)>& change) {
    const auto header = load<layout::Header>(segment, 0);
    const uint64_t at = header.sites_offset + uint64_t{header.sites_claimed - 1} * header.site_record_size;
    auto site = load<layout::SiteRecord>(segment, at);
    change(site);
    store(segment, at, site);
}

// Where the stack of the last ready site is; with_ruby: of the last whose stack has Ruby frames.
// 0 if there is none.
uint64_t last_stack_offset(const std::vector<char>& segment, bool with_ruby) {
    const auto header = load<layout::Header>(segment, 0);
    for (uint32_t slot = header.sites_claimed; slot-- > layout::kOverflowSites;) {
        const auto site =
            load<layout::SiteRecord>(segment, header.sites_offset + uint64_t{slot} * header.site_record_size);
        if (site.state != layout::kReady) continue;
        const uint64_t at = header.stacks_offset + uint64_t{site.stack} * layout::kStackAlignment;
        if (!with_ruby || load<layout::StackRecord>(segment, at).ruby_depth > 0) return at;
    }
    return 0;
}

void change_last_stack(std::vector<char>& segment, const std::function<void(layout::StackRecord&)>& change) {
    if (const uint64_t at = last_stack_offset(segment, false)) {
        auto stack = load<layout::StackRecord>(segment, at);
        change(stack);
        store(segment, at, stack);
    }
}

// The record of the innermost Ruby frame of the last stack that has one.
void change_last_ruby_frame(std::vector<char>& segment,
                            const std::function<void(layout::RubyFrameRecord&, uint32_t reference)>& change) {
    if (const uint64_t at = last_stack_offset(segment, true)) {
        const uint32_t reference = load<layout::StackRecord>(segment, at).ruby;
        const uint64_t record_at =
            load<layout::Header>(segment, 0).stacks_offset + uint64_t{reference} * layout::kStackAlignment;
        auto record = load<layout::RubyFrameRecord>(segment, record_at);
        change(record, reference);
        store(segment, record_at, record);
    }
}

// The entry the writer would use for `site` in the compact segment's single shard.
void change_delta_entry_of(std::vector<char>& segment, uint32_t site,
                           const std::function<void(layout::SiteDelta&)>& change) {
    const auto header = load<layout::Header>(segment, 0);
    const uint64_t at =
        header.site_deltas_offset + uint64_t{site & (header.site_delta_slots - 1)} * sizeof(layout::SiteDelta);
    auto delta = load<layout::SiteDelta>(segment, at);
    change(delta);
    store(segment, at, delta);
}

uint32_t last_site(const std::vector<char>& segment) { return load<layout::Header>(segment, 0).sites_claimed - 1; }

// Only rules deep inside the segment: the fuzzer finds the header's own checks by itself, and the
// corpus stays small.
const Variant kVariants[] = {
    {"truncated-to-header", [](auto& s) { s.resize(sizeof(layout::Header)); }},
    {"more-sites-claimed-than-capacity",
     [](auto& s) { change_header(s, [](auto& h) { h.sites_claimed = 0xffffffffu; }); }},
    {"exe-path-beyond-the-pool",
     [](auto& s) { change_header(s, [](auto& h) {
                       h.exe_path = {h.strings_capacity - 1, 2};
                   }); }},
    {"stack-deeper-than-max-depth",
     [](auto& s) { change_last_stack(s, [](auto& stack) { stack.native_depth = 0xff; }); }},
    {"site-naming-a-stack-outside-the-table",
     [](auto& s) { change_last_site(s, [](auto& site) { site.stack = 0xfffffff0u; }); }},
    {"stack-with-unterminated-ruby-file",
     [](auto& s) {
         const uint32_t pool_end = load<layout::Header>(s, 0).strings_capacity;
         change_last_ruby_frame(s, [pool_end](auto& record, uint32_t) { record.frame.file = pool_end; });
     }},
    // A cycle: only the depths along a backtrace end it.
    {"ruby-frame-calling-itself",
     [](auto& s) { change_last_ruby_frame(s, [](auto& record, uint32_t reference) { record.caller = reference; }); }},
    {"allocator-statistics-listing-more-arenas-than-they-hold",
     [](auto& s) {
         const uint64_t at = load<layout::Header>(s, 0).allocator_stats_offset;
         if (at == 0) return;
         auto statistics = load<layout::AllocatorStatistics>(s, at);
         statistics.allocator = layout::kAllocatorGlibc;
         statistics.arenas = statistics.arenas_total = layout::kMaxArenaStatistics + 1;
         store(s, at, statistics);
     }},
    // The record counts one allocation, the delta the rest of 2^64.
    {"delta-overflowing-its-site",
     [](auto& s) {
         change_last_site(s, [](auto& site) { site.allocs = std::max<uint64_t>(site.allocs, 1); });
         change_delta_entry_of(s, last_site(s), [&](auto& delta) { delta = {last_site(s), 0, UINT64_MAX, 0, 0, 0}; });
     },
     true},
    // Accepted: a site claimed after the reader read sites_claimed; the reader ignores it.
    {"delta-naming-an-unclaimed-site",
     [](auto& s) {
         const uint32_t unclaimed = last_site(s) + 1;
         change_delta_entry_of(s, unclaimed,
                               [unclaimed](auto& delta) { delta = {unclaimed, 0, UINT64_MAX, 1, UINT64_MAX, 8}; });
     },
     true},
};

void write(const fs::path& path, const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string option = argc == 5 ? argv[4] : "";
    const std::string kOne = "--with-variant=";
    const bool with_variants = option == "--with-variants" || option.starts_with(kOne);
    // Commas around every name, so that one is found whole.
    const std::string only = option.starts_with(kOne) ? "," + option.substr(kOne.size()) + "," : "";
    if (argc != 4 && !with_variants) {
        std::cerr << "usage: compact_segment <segment file> <output directory> <name> "
                     "[--with-variants | --with-variant=NAME,...]\n";
        return 2;
    }
    std::ifstream file(argv[1], std::ios::binary);
    const std::vector<char> segment{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    if (segment.size() < sizeof(layout::Header) ||
        std::memcmp(segment.data(), layout::kMagic, sizeof layout::kMagic) != 0) {
        std::cerr << argv[1] << " is not a leakwrap segment\n";
        return 1;
    }
    // The variants break records where the current layout has them.
    if (const uint32_t version = load<layout::Header>(segment, 0).layout_version; version != layout::kLayoutVersion) {
        std::cerr << argv[1] << " has layout version " << version << ", this tool makes seeds of "
                  << layout::kLayoutVersion << "\n";
        return 1;
    }
    const std::vector<char> compacted = compact(segment);
    const fs::path directory = argv[2];
    write(directory / argv[3], compacted);
    const bool has_delta_table = load<layout::Header>(compacted, 0).site_delta_slots != 0;
    for (const Variant& variant : kVariants) {
        if (!with_variants) break;
        if (variant.needs_delta_table && !has_delta_table) continue;
        const bool chosen = only.find("," + std::string(variant.name) + ",") != std::string::npos;
        if (!only.empty() && !chosen) continue;
        std::vector<char> broken = compacted;
        variant.change(broken);
        if (broken == compacted) continue;  // the rule is not in this segment (no Ruby frames)
        write(directory / (std::string(argv[3]) + "." + variant.name), broken);
    }
    return 0;
}
