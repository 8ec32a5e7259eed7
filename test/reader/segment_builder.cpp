#include "segment_builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace leakwrap::testing {
namespace {

uint64_t round_up_to_cache_line(uint64_t size) { return (size + 63) / 64 * 64; }

// Strings are stored NUL-terminated, as the writer stores them. Equal strings are not shared,
// so that tests see the reader compare Ruby files by content, not by offset.
class StringPoolWriter {
public:
    explicit StringPoolWriter(uint32_t capacity) : capacity_(capacity) {}

    layout::StringRef add(const std::string& text) {
        if (bytes_.size() + text.size() + 1 > capacity_) throw std::length_error("string pool full");
        const layout::StringRef ref{static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(text.size())};
        bytes_ += text;
        bytes_ += '\0';
        return ref;
    }
    const std::string& bytes() const { return bytes_; }

private:
    uint32_t capacity_;
    std::string bytes_;
};

template <class T>
T load(const std::vector<std::byte>& segment, uint64_t offset) {
    T value;
    std::memcpy(&value, segment.data() + offset, sizeof(value));
    return value;
}

layout::Header header_of(const std::vector<std::byte>& segment) { return load<layout::Header>(segment, 0); }

uint32_t size_class_of_site(const BuiltSite& site) {
    if (site.size_class) return *site.size_class;
    return layout::size_class_of(site.allocs == 0 ? 0 : site.alloc_bytes / site.allocs);
}

// Every slot of the site table up to the last one in use: the overflow sites (empty unless the
// test says otherwise), then the ordinary sites.
std::vector<BuiltSite> sites_by_slot(const SegmentBuilder& builder) {
    std::vector<BuiltSite> slots(layout::kOverflowSites);
    for (uint32_t size_class = 0; size_class < layout::kOverflowSites; ++size_class)
        slots[size_class].size_class = size_class;
    for (const auto& [size_class, site] : builder.overflow_sites) {
        slots.at(size_class) = site;
        slots[size_class].size_class = size_class;
    }
    slots.insert(slots.end(), builder.sites.begin(), builder.sites.end());
    return slots;
}

std::vector<BuiltBin> bins_of_sites(const std::vector<BuiltSite>& slots, const std::vector<BuiltDelta>& deltas,
                                    uint32_t bin_shards) {
    std::vector<BuiltBin> bins;
    for (uint32_t slot = 0; slot < slots.size(); ++slot) {
        const BuiltSite& site = slots[slot];
        if (site.state != layout::kReady) continue;
        bins.push_back(
            {size_class_of_site(site), slot % bin_shards, site.allocs, site.frees, site.alloc_bytes, site.free_bytes});
    }
    // A delta naming no ready site (a later slot, a race the reader tolerates) has no class.
    for (const BuiltDelta& delta : deltas) {
        if (delta.site >= slots.size() || slots[delta.site].state != layout::kReady) continue;
        bins.push_back({size_class_of_site(slots[delta.site]), delta.shard, delta.allocs, delta.frees,
                        delta.alloc_bytes, delta.free_bytes});
    }
    return bins;
}

// The Ruby backtrace of a site, innermost first.
std::vector<BuiltRubyFrame> ruby_frames_of(const BuiltSite& site) {
    if (site.ruby_file.empty()) return {};
    std::vector<BuiltRubyFrame> frames{{site.ruby_file, site.ruby_line}};
    frames.insert(frames.end(), site.outer_ruby.begin(), site.outer_ruby.end());
    return frames;
}

// The fields the two layouts' stack records have in common.
template <class Record>
Record stack_record(const BuiltSite& site, std::size_t ruby_depth) {
    Record record{};
    record.state = site.stack_state;
    record.module_generation = site.module_generation;
    record.native_depth = static_cast<decltype(record.native_depth)>(site.frames.size());
    record.ruby_depth = static_cast<decltype(record.ruby_depth)>(ruby_depth);
    record.flags = static_cast<decltype(record.flags)>(site.reduced ? layout::kStackReduced : 0);
    return record;
}

// The stack table: the sites' stacks in slot order. In layout 6 a Ruby frame record goes before
// the first stack that names it, after its caller (rule R8), and serves every later backtrace
// with the same frames from it outward.
class StackTableWriter {
public:
    StackTableWriter(uint32_t layout_version, StringPoolWriter& strings)
        : ruby_inline_(layout_version == 5), strings_(strings) {}

    // Returns the reference of the site's stack.
    uint32_t add(const BuiltSite& site) {
        const std::vector<BuiltRubyFrame> ruby = ruby_frames_of(site);
        if (ruby_inline_) {
            const uint32_t reference = next_reference();
            append(stack_record<layout::StackRecordV5>(site, ruby.size()));
            for (const uint64_t frame : site.frames) append(frame);
            for (const BuiltRubyFrame& frame : ruby) append(ruby_frame(frame));
            return reference;
        }
        auto record = stack_record<layout::StackRecord>(site, ruby.size());
        record.ruby = add_ruby_frames(ruby);
        const uint32_t reference = next_reference();
        append(record);
        for (const uint64_t frame : site.frames) append(frame);
        return reference;
    }

    const std::vector<std::byte>& bytes() const { return bytes_; }

private:
    uint32_t next_reference() const { return static_cast<uint32_t>(bytes_.size() / layout::kStackAlignment); }

    template <class T>
    void append(const T& value) {
        const auto* begin = reinterpret_cast<const std::byte*>(&value);
        bytes_.insert(bytes_.end(), begin, begin + sizeof(value));
    }

    layout::RubyFrame ruby_frame(const BuiltRubyFrame& frame) { return {strings_.add(frame.file).offset, frame.line}; }

    // Writes the records of a backtrace that the table lacks, outermost first; returns the
    // innermost one's reference, or kNoRubyFrame for no backtrace.
    uint32_t add_ruby_frames(const std::vector<BuiltRubyFrame>& frames) {
        uint32_t caller = layout::kNoRubyFrame;
        uint32_t depth = 1;
        for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame, ++depth) {
            const auto [entry, is_new] = records_.try_emplace({frame->file, frame->line, caller}, next_reference());
            if (is_new) append(layout::RubyFrameRecord{ruby_frame(*frame), caller, depth});
            caller = entry->second;
        }
        return caller;
    }

    bool ruby_inline_;
    StringPoolWriter& strings_;
    std::vector<std::byte> bytes_;
    // A frame, with its caller's reference, to the reference of its record.
    std::map<std::tuple<std::string, uint32_t, uint32_t>, uint32_t> records_;
};

}  // namespace

std::vector<std::byte> SegmentBuilder::build() const {
    const uint32_t site_record_size = sizeof(layout::SiteRecord);
    const uint64_t bins_size = uint64_t{layout::kSizeClassCount} * bin_shards * sizeof(layout::BinCounters);
    const std::vector<BuiltSite> slots = sites_by_slot(*this);
    StringPoolWriter strings(strings_capacity);
    const layout::StringRef exe_text = strings.add(exe);
    const layout::StringRef command_line_text = strings.add(command_line);
    StackTableWriter stacks(layout_version, strings);
    std::vector<uint32_t> stack_of_slot(slots.size(), layout::kNoStack);
    for (uint32_t slot = layout::kOverflowSites; slot < slots.size(); ++slot)
        stack_of_slot[slot] = stacks.add(slots[slot]);
    const uint64_t stacks_used = stacks.bytes().size();

    layout::Header header{};
    std::memcpy(header.magic, layout::kMagic, sizeof(header.magic));
    header.layout_version = layout_version;
    header.header_size = layout_version >= 8 ? sizeof(layout::Header) : layout::kHeaderSizeBeforeBirthGrid;
    if (layout_version >= 8) {
        header.birth_cells = birth_cells;
        header.birth_floor_ns = birth_floor_ns;
        header.birth_origin_boot_ns = birth_origin_boot_ns.value_or(start_time_ticks * 10'000'000);
    }
    header.pid = pid;
    header.parent_pid = parent_pid;
    header.start_time_ticks = start_time_ticks;
    header.created_unix_ns = created_unix_ns;
    std::memcpy(header.boot_id, boot_id.data(), std::min(boot_id.size(), sizeof(header.boot_id)));
    header.exe_path = exe_text;
    header.command_line = command_line_text;
    header.max_depth = max_depth;
    header.max_ruby_depth = max_ruby_depth;
    header.site_capacity = site_capacity;
    header.site_record_size = site_record_size;
    header.stacks_capacity = stacks_used + stack_slack;
    header.module_capacity = module_capacity;
    header.module_record_size = sizeof(layout::ModuleRecord);
    header.strings_capacity = strings_capacity;
    header.bin_shards = bin_shards;
    if (layout_version >= 13) header.bin_shards_backed = std::min(bin_shards_backed, bin_shards - 1);
    header.site_delta_slots = site_delta_slots;
    header.sample_interval = sample_interval;
    const bool statistics = allocator_statistics && layout_version >= 9;
    header.allocator_stats_offset = statistics ? round_up_to_cache_line(sizeof(layout::Header)) : 0;
    header.sites_offset =
        statistics ? round_up_to_cache_line(header.allocator_stats_offset + sizeof(layout::AllocatorStatistics))
                   : sizeof(layout::Header);
    header.stacks_offset = round_up_to_cache_line(header.sites_offset + uint64_t{site_capacity} * site_record_size);
    header.modules_offset = round_up_to_cache_line(header.stacks_offset + header.stacks_capacity);
    header.bins_offset =
        round_up_to_cache_line(header.modules_offset + uint64_t{module_capacity} * sizeof(layout::ModuleRecord));
    header.strings_offset = header.bins_offset + bins_size;
    header.site_deltas_offset = round_up_to_cache_line(header.strings_offset + strings_capacity);
    header.segment_size = round_up_to_cache_line(header.site_deltas_offset +
                                                 uint64_t{bin_shards} * site_delta_slots * sizeof(layout::SiteDelta));
    header.sites_claimed = static_cast<uint32_t>(slots.size());
    header.stacks_used = stacks_used;
    header.modules_claimed = static_cast<uint32_t>(modules.size());
    header.module_generation = 1;
    header.lost_sites = lost_sites;
    header.process_state = process_state;
    header.state = layout::kReady;

    std::vector<std::byte> segment(header.segment_size);
    if (statistics)
        std::memcpy(segment.data() + header.allocator_stats_offset, &*allocator_statistics,
                    sizeof(layout::AllocatorStatistics));
    // An empty table's data() may be null, which memcpy must not be given even for no bytes.
    if (stacks_used > 0) std::memcpy(segment.data() + header.stacks_offset, stacks.bytes().data(), stacks_used);
    for (uint32_t slot = 0; slot < slots.size(); ++slot) {
        const BuiltSite& site = slots[slot];
        layout::SiteRecord record{};
        record.allocs = site.allocs;
        record.frees = site.frees;
        record.alloc_bytes = site.alloc_bytes;
        record.free_bytes = site.free_bytes;
        record.state = static_cast<uint16_t>(site.state);
        record.size_class = static_cast<uint8_t>(size_class_of_site(site));
        record.birth_cell = static_cast<uint8_t>(site.birth_cell);
        record.stack = stack_of_slot[slot];
        std::memcpy(segment.data() + header.sites_offset + uint64_t{slot} * site_record_size, &record, sizeof(record));
    }
    for (uint64_t entry = 0; entry < uint64_t{bin_shards} * site_delta_slots; ++entry) {
        layout::SiteDelta empty{};
        empty.site = layout::kNoDeltaSite;
        std::memcpy(segment.data() + header.site_deltas_offset + entry * sizeof(empty), &empty, sizeof(empty));
    }
    std::vector<bool> entry_used(uint64_t{bin_shards} * site_delta_slots);
    for (const BuiltDelta& delta : deltas) {
        const uint32_t slot = delta.slot.value_or(delta.site & (site_delta_slots - 1));
        if (delta.shard >= bin_shards || slot >= site_delta_slots)
            throw std::out_of_range("delta entry outside the delta table");
        const uint64_t entry = uint64_t{delta.shard} * site_delta_slots + slot;
        if (entry_used[entry]) throw std::logic_error("two deltas for one delta entry");
        entry_used[entry] = true;
        layout::SiteDelta record{};
        record.site = delta.site;
        record.allocs = delta.allocs;
        record.frees = delta.frees;
        record.alloc_bytes = delta.alloc_bytes;
        record.free_bytes = delta.free_bytes;
        std::memcpy(segment.data() + header.site_deltas_offset + entry * sizeof(record), &record, sizeof(record));
    }
    for (const BuiltBin& bin : bins.value_or(bins_of_sites(slots, deltas, bin_shards))) {
        const uint64_t at =
            header.bins_offset + layout::bin_index(bin.size_class, bin.shard) * sizeof(layout::BinCounters);
        layout::BinCounters counters;
        std::memcpy(&counters, segment.data() + at, sizeof(counters));
        counters.allocs += bin.allocs;
        counters.frees += bin.frees;
        counters.alloc_bytes += bin.alloc_bytes;
        counters.free_bytes += bin.free_bytes;
        std::memcpy(segment.data() + at, &counters, sizeof(counters));
    }
    for (uint32_t slot = 0; slot < modules.size(); ++slot) {
        const BuiltModule& module = modules[slot];
        layout::ModuleRecord record{};
        record.state = module.state;
        record.load_generation = module.load_generation;
        record.unload_generation = module.unload_generation;
        record.build_id_length = static_cast<uint32_t>(module.build_id.size());
        record.path = strings.add(module.path);
        record.load_bias = module.load_bias;
        record.start = module.start;
        record.end = module.end;
        std::copy_n(module.build_id.begin(), std::min<size_t>(module.build_id.size(), layout::kBuildIdMax),
                    record.build_id);
        std::memcpy(segment.data() + header.modules_offset + uint64_t{slot} * sizeof(record), &record, sizeof(record));
    }
    header.strings_used = static_cast<uint32_t>(strings.bytes().size());
    std::memcpy(segment.data() + header.strings_offset, strings.bytes().data(), strings.bytes().size());
    std::memcpy(segment.data(), &header, sizeof(header));
    return segment;
}

uint64_t site_offset(const std::vector<std::byte>& segment, uint32_t slot) {
    const auto header = header_of(segment);
    return header.sites_offset + uint64_t{slot} * header.site_record_size;
}

uint64_t stack_offset(const std::vector<std::byte>& segment, uint32_t slot) {
    const auto site = load<layout::SiteRecord>(segment, site_offset(segment, slot));
    return header_of(segment).stacks_offset + uint64_t{site.stack} * layout::kStackAlignment;
}

uint64_t ruby_frame_offset(const std::vector<std::byte>& segment, uint32_t slot, uint32_t index) {
    const auto header = header_of(segment);
    const uint64_t stack_at = stack_offset(segment, slot);
    if (header.layout_version == 5) {
        const auto stack = load<layout::StackRecordV5>(segment, stack_at);
        if (index >= stack.ruby_depth) throw std::out_of_range("no such Ruby frame");
        return stack_at + layout::stack_record_size_v5(stack.native_depth, index);  // what precedes it
    }
    const auto stack = load<layout::StackRecord>(segment, stack_at);
    if (index >= stack.ruby_depth) throw std::out_of_range("no such Ruby frame");
    const auto record_at = [&](uint32_t reference) {
        return header.stacks_offset + uint64_t{reference} * layout::kStackAlignment;
    };
    uint64_t at = record_at(stack.ruby);
    for (; index > 0; --index) at = record_at(load<layout::RubyFrameRecord>(segment, at).caller);
    return at;
}

uint64_t module_offset(const std::vector<std::byte>& segment, uint32_t slot) {
    const auto header = header_of(segment);
    return header.modules_offset + uint64_t{slot} * header.module_record_size;
}

uint64_t bin_offset(const std::vector<std::byte>& segment, uint32_t size_class, uint32_t shard) {
    const auto header = header_of(segment);
    return header.bins_offset + layout::bin_index(size_class, shard) * sizeof(layout::BinCounters);
}

uint64_t site_delta_offset(const std::vector<std::byte>& segment, uint32_t shard, uint32_t slot) {
    const auto header = header_of(segment);
    return header.site_deltas_offset + (uint64_t{shard} * header.site_delta_slots + slot) * sizeof(layout::SiteDelta);
}

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes, mode_t mode) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) throw std::runtime_error("cannot create " + path.string());
    const bool complete = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    // fchmod because open() applies the umask, and some tests need exactly `mode`.
    const bool mode_set = ::fchmod(fd, mode) == 0;
    ::close(fd);
    if (!complete || !mode_set) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace leakwrap::testing
