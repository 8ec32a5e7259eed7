#include "report_pprof.h"

#include "pprof_tables.h"
#include "profile.pb.h"
#include "report_folded.h"
#include "row_selection.h"

#include <zlib.h>

#include <chrono>
#include <functional>
#include <cstdio>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

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

void append_varint(std::string& bytes, uint64_t value) {
    while (value >= 0x80) {
        bytes += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    bytes += static_cast<char>(value);
}

// A message as a member of field `field` of the message around it, as that one's serialization
// has it: the tag, the length, the bytes.
void append_field(std::string& bytes, int field, const google::protobuf::MessageLite& message) {
    append_varint(bytes, (static_cast<uint64_t>(field) << 3) | 2);  // wire type 2: length-delimited
    append_varint(bytes, message.ByteSizeLong());
    message.AppendToString(&bytes);
}

void append_field(ChunkedBytes& bytes, int field, const google::protobuf::MessageLite& message) {
    std::string serialized;
    append_field(serialized, field, message);
    bytes.append(serialized);
}

// Gzip written as it comes. zlib's output depends on the bytes and the settings only, not on how
// they are handed in, so this is what compressing the whole profile at once gave.
class GzipWriter {
public:
    explicit GzipWriter(std::ostream& out) : out_(out) {
        // 15 bits of window, +16: a gzip header and trailer instead of zlib's.
        if (deflateInit2(&stream_, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK)
            throw std::runtime_error("cannot initialize zlib");
    }
    GzipWriter(const GzipWriter&) = delete;
    GzipWriter& operator=(const GzipWriter&) = delete;
    ~GzipWriter() { deflateEnd(&stream_); }

    void write(std::string_view data) { deflate_all(data, Z_NO_FLUSH); }
    void finish() {
        if (deflate_all({}, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("cannot gzip the profile");
    }

private:
    int deflate_all(std::string_view data, int flush) {
        stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
        stream_.avail_in = static_cast<uInt>(data.size());
        int status = Z_OK;
        do {
            stream_.next_out = reinterpret_cast<Bytef*>(buffer_);
            stream_.avail_out = sizeof(buffer_);
            status = deflate(&stream_, flush);
            if (status == Z_STREAM_ERROR) throw std::runtime_error("cannot gzip the profile");
            out_.write(buffer_, static_cast<std::streamsize>(sizeof(buffer_) - stream_.avail_out));
        } while (stream_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
        return status;
    }

    std::ostream& out_;
    z_stream stream_{};
    char buffer_[1 << 16];
};

// Builds the profile's tables, each entry once: strings, mappings, functions and locations are
// referred to by index or id from the samples.
class ProfileBuilder {
public:
    explicit ProfileBuilder(const Snapshot& snapshot) : snapshot_(snapshot) { string_index(""); }

    int64_t string_index(std::string_view text) { return strings_.index(text); }

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

    // What follows the samples (field 2) in the profile's bytes: every field after them. The
    // sample types (field 1) go before the samples, written by the caller, and are cleared here.
    void write_after_samples(const std::function<void(std::string_view)>& write) {
        profile_.clear_sample_type();
        // Fields 3, 4 and 5 come before the string table (6) and the rest, which protobuf
        // writes in the order of their numbers.
        mappings_.flush(write);
        locations_.flush(write);
        functions_bytes_.flush(write);
        strings_.bytes().flush(write);
        write(profile_.SerializeAsString());
    }

private:
    using Line = std::pair<uint64_t, int64_t>;  // function id, line

    uint64_t location_id(std::span<const RowFrame> frames) {
        if (frames.front().native) return native_location_id(frames);
        // The Ruby location and the pseudo frames ([overflow]) have no address and no module.
        const RowFrame& frame = frames.front();
        const std::string_view file = frame.ruby ? std::string_view(frame.ruby->file) : "";
        const int64_t line = frame.ruby ? frame.ruby->line : 0;
        // The function names (name, file) once, so (function, line) names the location. A
        // location that exists has its function already, so this adds nothing before the lookup
        // that adding the location would not (keys of three strings took 5.5 MiB on Rails).
        const uint64_t function = function_id(frame.name, file);
        const PairIds::Pair key{function, static_cast<uint64_t>(line)};
        if (const uint64_t found = synthetic_locations_.find(key)) return found;
        const uint64_t id = add_location(0, 0, {{function, line}});
        synthetic_locations_.add(key, id);
        return id;
    }

    uint64_t native_location_id(std::span<const RowFrame> frames) {
        // The symbolizer resolves each (address, module generation) once and keeps the result,
        // so where its first frame is identifies a location.
        const ResolvedFrame* first = frames.front().native;
        const PairIds::Pair key{reinterpret_cast<uintptr_t>(first), 0};
        if (const uint64_t found = native_locations_.find(key)) return found;
        std::vector<Line> lines;
        for (const RowFrame& frame : frames)
            lines.emplace_back(function_id(frame.name, frame.native->file ? std::string_view(*frame.native->file) : ""),
                               frame.native->line.value_or(0));
        const uint64_t id = add_location(mapping_id(*first), first->address, lines);
        native_locations_.add(key, id);
        return id;
    }

    // Locations, functions and mappings are kept serialized, as they will be written: as
    // messages, those of a Rails process took 20 MiB.
    uint64_t add_location(uint64_t mapping, uint64_t address, const std::vector<Line>& lines) {
        pprof::Location location;
        location.set_id(++location_count_);
        location.set_mapping_id(mapping);
        location.set_address(address);
        for (const auto& [function, line] : lines) {
            auto* entry = location.add_line();
            entry->set_function_id(function);
            entry->set_line(line);
        }
        append_field(locations_, pprof::Profile::kLocationFieldNumber, location);
        return location.id();
    }

    uint64_t function_id(std::string_view name, std::string_view file) {
        // A function that exists has both its strings in the table, so looking them up first
        // adds them in the order a new function would: its name, then its file.
        const int64_t name_index = string_index(name);  // in this order, not as arguments
        const int64_t file_index = string_index(file);
        const PairIds::Pair key{static_cast<uint64_t>(name_index), static_cast<uint64_t>(file_index)};
        if (const uint64_t found = functions_.find(key)) return found;
        pprof::Function function;
        function.set_id(++function_count_);
        function.set_name(name_index);
        function.set_system_name(name_index);
        function.set_filename(file_index);
        append_field(functions_bytes_, pprof::Profile::kFunctionFieldNumber, function);
        functions_.add(key, function.id());
        return function.id();
    }

    // The module the address lies in, as the symbolizer found it; 0 (no mapping) if none.
    uint64_t mapping_id(const ResolvedFrame& frame) {
        if (!frame.module) return 0;
        for (std::size_t index = 0; index < snapshot_.modules.size(); ++index) {
            const Module& module = snapshot_.modules[index];
            if (module.path != *frame.module || frame.address < module.start ||
                frame.address >= module.end)
                continue;
            const auto [entry, is_new] = mappings_by_module_.try_emplace(index, 0);
            if (is_new) entry->second = add_mapping(module);
            return entry->second;
        }
        return 0;
    }

    uint64_t add_mapping(const Module& module) {
        pprof::Mapping mapping;
        mapping.set_id(++mapping_count_);
        mapping.set_memory_start(module.start);
        mapping.set_memory_limit(module.end);
        // `start` is where the first PT_LOAD segment is mapped, and that one begins the file.
        mapping.set_file_offset(0);
        mapping.set_filename(string_index(module.path));
        mapping.set_build_id(string_index(hex_bytes(module.build_id)));
        // Every location is resolved already: pprof must not look for the binaries.
        mapping.set_has_functions(true);
        mapping.set_has_filenames(true);
        mapping.set_has_line_numbers(true);
        append_field(mappings_, pprof::Profile::kMappingFieldNumber, mapping);
        return mapping.id();
    }

    const Snapshot& snapshot_;
    pprof::Profile profile_;
    PprofStringTable strings_{pprof::Profile::kStringTableFieldNumber};
    std::map<std::size_t, uint64_t> mappings_by_module_;  // module index -> mapping id
    PairIds functions_;  // (name, file) string indexes -> function id
    ChunkedBytes mappings_, locations_, functions_bytes_;  // serialized as fields of the profile
    uint64_t mapping_count_ = 0, location_count_ = 0, function_count_ = 0;
    PairIds native_locations_;     // (first resolved frame, 0) -> location id
    PairIds synthetic_locations_;  // (function, line) -> location id
};

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

    // Written as they come, each sample serialized and compressed on its own: the profile of a
    // Rails process built whole, serialized and compressed took 45 MiB more than its rows.
    // The sample types come first in the profile's bytes; they are known by now.
    pprof::Profile sample_types;
    *sample_types.mutable_sample_type() = profile.sample_type();
    GzipWriter gzip(out);
    gzip.write(sample_types.SerializeAsString());

    const int64_t site_key = builder.string_index("site");
    std::string bytes;
    for (const ReportRow& row : selected_rows(snapshot, input.options, input.symbolizer).rows) {
        pprof::Sample sample;
        builder.add_locations(sample, row_frames(row, input.symbolizer, input.options.hide_runtime));
        for (const uint64_t value : {row.counters.live_bytes(), row.counters.live_blocks(),
                                     row.counters.alloc_bytes, row.counters.allocs})
            sample.add_value(as_value(value));
        auto* label = sample.add_label();
        label->set_key(site_key);
        label->set_num(row.id);
        bytes.clear();
        append_field(bytes, pprof::Profile::kSampleFieldNumber, sample);
        gzip.write(bytes);
    }
    builder.write_after_samples([&](std::string_view part) { gzip.write(part); });
    gzip.finish();
}

}  // namespace leakwrap
