#include "report_pprof.h"

#include "profile.pb.h"
#include "report_folded.h"
#include "row_selection.h"

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

namespace leakwrap {
namespace {

namespace pprof = perftools::profiles;

std::string hex_bytes(const std::vector<uint8_t>& bytes) {
    std::string hex;
    for (const uint8_t byte : bytes) {
        char digits[3];
        std::snprintf(digits, sizeof(digits), "%02x", byte);
        hex += digits;
    }
    return hex;
}

// Builds the profile's tables, each entry once: strings, mappings, functions and locations are
// referred to by index or id from the samples.
class ProfileBuilder {
public:
    explicit ProfileBuilder(const Snapshot& snapshot) : snapshot_(snapshot) { string_index(""); }

    int64_t string_index(const std::string& text) {
        const auto [entry, is_new] = strings_.try_emplace(text, profile_.string_table_size());
        if (is_new) profile_.add_string_table(text);
        return entry->second;
    }

    void add_sample_type(const std::string& type, const std::string& unit) {
        auto* value_type = profile_.add_sample_type();
        value_type->set_type(string_index(type));
        value_type->set_unit(string_index(unit));
    }

    // The sample's locations, innermost first. The frames of one address (its inlined functions,
    // then the function holding them) are one location with a line for each, innermost first:
    // pprof's own form of inlining, which keeps the address one location.
    void add_locations(pprof::Sample& sample, const std::vector<RowFrame>& frames) {
        for (std::size_t first = 0; first < frames.size();) {
            std::size_t last = first;
            while (frames[last].native && frames[last].native->inlined && last + 1 < frames.size())
                ++last;
            sample.add_location_id(location_id(std::span(frames).subspan(first, last - first + 1)));
            first = last + 1;
        }
    }

    pprof::Profile& profile() { return profile_; }

private:
    using Line = std::pair<uint64_t, int64_t>;  // function id, line

    uint64_t location_id(std::span<const RowFrame> frames) {
        if (frames.front().native) return native_location_id(frames);
        // The Ruby location and the pseudo frames ([overflow]) have no address and no module.
        const RowFrame& frame = frames.front();
        const std::string file = frame.ruby ? frame.ruby->file.str() : "";
        const int64_t line = frame.ruby ? frame.ruby->line : 0;
        const auto key = std::make_tuple(frame.name, file, line);
        if (const auto found = synthetic_locations_.find(key); found != synthetic_locations_.end())
            return found->second;
        const uint64_t id = add_location(0, 0, {{function_id(frame.name, file), line}});
        synthetic_locations_.emplace(key, id);
        return id;
    }

    uint64_t native_location_id(std::span<const RowFrame> frames) {
        // The symbolizer resolves each (address, module generation) once and keeps the result,
        // so where its first frame is identifies a location.
        const ResolvedFrame* key = frames.front().native;
        if (const auto found = native_locations_.find(key); found != native_locations_.end())
            return found->second;
        std::vector<Line> lines;
        for (const RowFrame& frame : frames)
            lines.emplace_back(function_id(frame.name, frame.native->file.value_or("")),
                               frame.native->line.value_or(0));
        const uint64_t id = add_location(mapping_id(*key), key->address, lines);
        native_locations_.emplace(key, id);
        return id;
    }

    uint64_t add_location(uint64_t mapping, uint64_t address, const std::vector<Line>& lines) {
        auto* location = profile_.add_location();
        location->set_id(profile_.location_size());
        location->set_mapping_id(mapping);
        location->set_address(address);
        for (const auto& [function, line] : lines) {
            auto* entry = location->add_line();
            entry->set_function_id(function);
            entry->set_line(line);
        }
        return location->id();
    }

    uint64_t function_id(const std::string& name, const std::string& file) {
        const auto key = std::make_pair(name, file);
        if (const auto found = functions_.find(key); found != functions_.end())
            return found->second;
        auto* function = profile_.add_function();
        function->set_id(profile_.function_size());
        function->set_name(string_index(name));
        function->set_system_name(function->name());
        function->set_filename(string_index(file));
        functions_.emplace(key, function->id());
        return function->id();
    }

    // The module the address lies in, as the symbolizer found it; 0 (no mapping) if none.
    uint64_t mapping_id(const ResolvedFrame& frame) {
        if (!frame.module) return 0;
        for (std::size_t index = 0; index < snapshot_.modules.size(); ++index) {
            const Module& module = snapshot_.modules[index];
            if (module.path != *frame.module || frame.address < module.start ||
                frame.address >= module.end)
                continue;
            const auto [entry, is_new] = mappings_.try_emplace(index, 0);
            if (is_new) entry->second = add_mapping(module);
            return entry->second;
        }
        return 0;
    }

    uint64_t add_mapping(const Module& module) {
        auto* mapping = profile_.add_mapping();
        mapping->set_id(profile_.mapping_size());
        mapping->set_memory_start(module.start);
        mapping->set_memory_limit(module.end);
        // `start` is where the first PT_LOAD segment is mapped, and that one begins the file.
        mapping->set_file_offset(0);
        mapping->set_filename(string_index(module.path));
        mapping->set_build_id(string_index(hex_bytes(module.build_id)));
        // Every location is resolved already: pprof must not look for the binaries.
        mapping->set_has_functions(true);
        mapping->set_has_filenames(true);
        mapping->set_has_line_numbers(true);
        return mapping->id();
    }

    const Snapshot& snapshot_;
    pprof::Profile profile_;
    std::unordered_map<std::string, int64_t> strings_;
    std::map<std::size_t, uint64_t> mappings_;  // module index -> mapping id
    std::map<std::pair<std::string, std::string>, uint64_t> functions_;
    std::map<const ResolvedFrame*, uint64_t> native_locations_;
    std::map<std::tuple<std::string, std::string, int64_t>, uint64_t> synthetic_locations_;
};

std::string gzip(const std::string& data) {
    z_stream stream{};
    // 15 bits of window, +16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        throw std::runtime_error("cannot initialize zlib");
    std::string compressed(deflateBound(&stream, data.size()), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = static_cast<uInt>(data.size());
    stream.next_out = reinterpret_cast<Bytef*>(compressed.data());
    stream.avail_out = static_cast<uInt>(compressed.size());
    const int status = deflate(&stream, Z_FINISH);
    compressed.resize(stream.total_out);
    deflateEnd(&stream);
    if (status != Z_STREAM_END) throw std::runtime_error("cannot gzip the profile");
    return compressed;
}

int64_t as_value(uint64_t count) {
    return count > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(count);
}

}  // namespace

void write_pprof_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    ProfileBuilder builder(snapshot);
    builder.add_sample_type("live_space", "bytes");
    builder.add_sample_type("live_objects", "count");
    builder.add_sample_type("alloc_space", "bytes");
    builder.add_sample_type("alloc_objects", "count");

    pprof::Profile& profile = builder.profile();
    // The field names the type by its string-table index, not by its position among the sample
    // types: 0 is the empty string, which pprof reads as "no default" and then opens on the last
    // type (alloc_objects).
    profile.set_default_sample_type(builder.string_index("live_space"));
    profile.set_time_nanos(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
    for (const std::string& comment :
         {"leakwrap-report: pid " + std::to_string(snapshot.pid) + " (" +
              std::string(owner_state_name(input.owner)) + ") " + snapshot.exe,
          "command: " + snapshot.command_line})
        profile.add_comment(builder.string_index(comment));
    if (snapshot.sampled()) {
        profile.add_comment(builder.string_index(
            "sampling mode (LEAKWRAP_SAMPLE): the values are estimates, totals are exact"));
        auto* period_type = profile.mutable_period_type();
        period_type->set_type(builder.string_index("space"));
        period_type->set_unit(builder.string_index("bytes"));
        profile.set_period(as_value(snapshot.sample_interval));
    }

    const int64_t site_key = builder.string_index("site");
    for (const ReportRow& row : selected_rows(snapshot, input.options, input.symbolizer).rows) {
        auto* sample = profile.add_sample();
        builder.add_locations(*sample,
                              row_frames(row, input.symbolizer, input.options.hide_runtime));
        for (const uint64_t value : {row.counters.live_bytes(), row.counters.live_blocks(),
                                     row.counters.alloc_bytes, row.counters.allocs})
            sample->add_value(as_value(value));
        auto* label = sample->add_label();
        label->set_key(site_key);
        label->set_num(row.id);
    }

    const std::string compressed = gzip(profile.SerializeAsString());
    out.write(compressed.data(), static_cast<std::streamsize>(compressed.size()));
}

}  // namespace leakwrap
