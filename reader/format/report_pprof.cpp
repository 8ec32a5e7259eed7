#include "report_pprof.h"

#include "gzip_writer.h"
#include "pprof_tables.h"
#include "proto_wire.h"
#include "report_folded.h"
#include "row_selection.h"

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

// Field numbers of pprof's profile.proto (perftools.profiles).
namespace profile {
constexpr int kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5, kStringTable = 6,
              kTimeNanos = 9, kPeriodType = 11, kPeriod = 12, kComment = 13, kDefaultSampleType = 14;
}
namespace value_type {
constexpr int kType = 1, kUnit = 2;
}
namespace sample {
constexpr int kLocationId = 1, kValue = 2, kLabel = 3;
}
namespace label {
constexpr int kKey = 1, kNum = 3;
}
namespace mapping {
constexpr int kId = 1, kMemoryStart = 2, kMemoryLimit = 3, kFileOffset = 4, kFilename = 5, kBuildId = 6,
              kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9;
}
namespace location {
constexpr int kId = 1, kMappingId = 2, kAddress = 3, kLine = 4;
}
namespace line {
constexpr int kFunctionId = 1, kLine = 2;
}
namespace function {
constexpr int kId = 1, kName = 2, kSystemName = 3, kFilename = 4;
}

std::string hex_bytes(const std::vector<uint8_t>& bytes) {
    std::string hex;
    for (const uint8_t byte : bytes) {
        char digits[3];
        std::snprintf(digits, sizeof(digits), "%02x", byte);
        hex += digits;
    }
    return hex;
}

// Builds the profile's tables, each entry once and written to `write` as it is made: strings,
// mappings, functions and locations are referred to by index or id from the samples.
class ProfileBuilder {
public:
    ProfileBuilder(const Snapshot& snapshot, const ProfileSink& write)
        : snapshot_(snapshot), write_(write), strings_(profile::kStringTable, write) {
        string_index("");
    }

    int64_t string_index(std::string_view text) { return strings_.index(text); }

    // A ValueType message: a sample type, or the period type.
    ProtoMessage value_type(std::string_view type, std::string_view unit) {
        ProtoMessage message;
        message.number(value_type::kType, string_index(type));
        message.number(value_type::kUnit, string_index(unit));
        return message;
    }

    // The sample's locations, innermost first. The frames of one address (its inlined functions,
    // then the function holding them) are one location with a line for each, innermost first:
    // pprof's own form of inlining, which keeps the address one location.
    std::vector<uint64_t> location_ids(const std::vector<RowFrame>& frames) {
        std::vector<uint64_t> ids;
        for (std::size_t first = 0; first < frames.size();) {
            std::size_t last = first;
            while (frames[last].native && frames[last].native->inlined && last + 1 < frames.size()) ++last;
            ids.push_back(location_id(std::span(frames).subspan(first, last - first + 1)));
            first = last + 1;
        }
        return ids;
    }

private:
    using Line = std::pair<uint64_t, int64_t>;  // function id, line

    uint64_t location_id(std::span<const RowFrame> frames) {
        if (frames.front().native) return native_location_id(frames);
        if (frames.front().ruby) return ruby_location_id(frames.front());
        // The pseudo frames ([overflow], [no stack]) have no address, module, file or line.
        const uint64_t function = function_id(frames.front().name, "");
        const PairIds::Pair key{function, 0};
        if (const uint64_t found = pseudo_locations_.find(key)) return found;
        const uint64_t id = add_location(0, 0, {{function, 0}});
        pseudo_locations_.add(key, id);
        return id;
    }

    // A Ruby line is a function and a location of its own, named "ruby:file:line", with no address
    // and no module. Found by the file's number and the line, its name is written once and kept
    // nowhere: the texts of a large app's Ruby lines, kept to find them again, would be a table of
    // their own.
    uint64_t ruby_location_id(const RowFrame& frame) {
        const RubyLocation& ruby = *frame.ruby;
        const PairIds::Pair key{ruby.file.number(), ruby.line};
        if (const uint64_t found = ruby_locations_.find(key)) return found;
        const int64_t name = strings_.append(frame.name);  // in this order, not as arguments
        // No system name: pprof takes a function whose two names agree for one it may demangle,
        // and cuts what lies between < and > from a name with them, which made
        // "ruby:<internal:…/kernel_require.rb>:85", Ruby's most frequent frame, "ruby::85".
        const uint64_t function = add_function(name, string_index(ruby.file), 0);
        const uint64_t id = add_location(0, 0, {{function, ruby.line}});
        ruby_locations_.add(key, id);
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

    uint64_t add_location(uint64_t mapping, uint64_t address, const std::vector<Line>& lines) {
        const uint64_t id = ++location_count_;
        ProtoMessage message;
        message.number(location::kId, id).number(location::kMappingId, mapping).number(location::kAddress, address);
        for (const auto& [function, number] : lines)
            message.message(location::kLine,
                            ProtoMessage().number(line::kFunctionId, function).number(line::kLine, number));
        write_(ProtoMessage().message(profile::kLocation, message).serialized());
        return id;
    }

    uint64_t function_id(std::string_view name, std::string_view file) {
        // A function that exists has both its strings in the table, so looking them up first
        // adds them in the order a new function would: its name, then its file.
        const int64_t name_index = string_index(name);  // in this order, not as arguments
        const int64_t file_index = string_index(file);
        // A profile of more than 4 billion strings would not fit in memory.
        const PairIds::Pair key{static_cast<uint64_t>(name_index), static_cast<uint32_t>(file_index)};
        if (const uint64_t found = functions_.find(key)) return found;
        const uint64_t id = add_function(name_index, file_index, name_index);
        functions_.add(key, id);
        return id;
    }

    uint64_t add_function(int64_t name_index, int64_t file_index, int64_t system_name_index) {
        const uint64_t id = ++function_count_;
        ProtoMessage message;
        message.number(function::kId, id)
            .number(function::kName, name_index)
            .number(function::kSystemName, system_name_index)
            .number(function::kFilename, file_index);
        write_(ProtoMessage().message(profile::kFunction, message).serialized());
        return id;
    }

    // The module the address lies in, as the symbolizer found it; 0 (no mapping) if none.
    uint64_t mapping_id(const ResolvedFrame& frame) {
        if (!frame.module) return 0;
        for (std::size_t index = 0; index < snapshot_.modules.size(); ++index) {
            const Module& module = snapshot_.modules[index];
            if (module.path != *frame.module || frame.address < module.start || frame.address >= module.end) continue;
            const auto [entry, is_new] = mappings_by_module_.try_emplace(index, 0);
            if (is_new) entry->second = add_mapping(module);
            return entry->second;
        }
        return 0;
    }

    uint64_t add_mapping(const Module& module) {
        const uint64_t id = ++mapping_count_;
        const int64_t filename = string_index(module.path);  // in this order, not as arguments
        const int64_t build_id = string_index(hex_bytes(module.build_id));
        ProtoMessage message;
        message.number(mapping::kId, id)
            .number(mapping::kMemoryStart, module.start)
            .number(mapping::kMemoryLimit, module.end)
            // `start` is where the first PT_LOAD segment is mapped, and that one begins the file.
            .number(mapping::kFileOffset, uint64_t{0})
            .number(mapping::kFilename, filename)
            .number(mapping::kBuildId, build_id)
            // Every location is resolved already: pprof must not look for the binaries.
            .flag(mapping::kHasFunctions, true)
            .flag(mapping::kHasFilenames, true)
            .flag(mapping::kHasLineNumbers, true);
        write_(ProtoMessage().message(profile::kMapping, message).serialized());
        return id;
    }

    const Snapshot& snapshot_;
    const ProfileSink& write_;
    PprofStringTable strings_;
    std::map<std::size_t, uint64_t> mappings_by_module_;  // module index -> mapping id
    PairIds functions_;                                   // (name, file) string indexes -> function id
    uint64_t mapping_count_ = 0, location_count_ = 0, function_count_ = 0;
    PairIds native_locations_;  // (first resolved frame, 0) -> location id
    PairIds ruby_locations_;    // (Ruby file's number, line) -> location id
    PairIds pseudo_locations_;  // (function, 0) -> location id
};

int64_t as_value(uint64_t count) { return count > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(count); }

}  // namespace

void write_pprof_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    // Written as they come, each sample (and each entry of the tables) serialized and compressed
    // on its own: a profile built whole, then serialized and compressed, holds three copies of
    // itself at once.
    GzipWriter gzip(out, GzipWriter::kSmallest);
    const ProfileSink write = [&](std::string_view part) { gzip.write(part); };
    ProfileBuilder builder(snapshot, write);
    // The profile's fields other than samples and tables, written first.
    ProtoMessage fields;
    for (const auto& [type, unit] : {std::pair{"live_space", "bytes"}, std::pair{"live_objects", "count"},
                                     std::pair{"alloc_space", "bytes"}, std::pair{"alloc_objects", "count"}})
        fields.message(profile::kSampleType, builder.value_type(type, unit));
    // The field names the type by its string-table index, not by its position among the sample
    // types: 0 is the empty string, which pprof reads as "no default" and then opens on the last
    // type (alloc_objects).
    const int64_t default_sample_type = builder.string_index("live_space");
    std::vector<int64_t> comments;
    for (const std::string& comment : {"leakwrap-report: pid " + std::to_string(snapshot.pid) + " (" +
                                           std::string(owner_state_name(input.owner)) + ") " + snapshot.exe,
                                       "command: " + snapshot.command_line})
        comments.push_back(builder.string_index(comment));
    fields.number(profile::kTimeNanos, static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                std::chrono::system_clock::now().time_since_epoch())
                                                                .count()));
    if (snapshot.sampled()) {
        comments.push_back(builder.string_index(
            snapshot.bins_estimated ? "sampling mode (LEAKWRAP_SAMPLE): the values and the totals are estimates"
                                    : "sampling mode (LEAKWRAP_SAMPLE): the values are estimates, totals are exact"));
        fields.message(profile::kPeriodType, builder.value_type("space", "bytes"));
        fields.number(profile::kPeriod, as_value(snapshot.sample_interval));
    }
    fields.numbers(profile::kComment, std::span<const int64_t>(comments));
    fields.number(profile::kDefaultSampleType, default_sample_type);
    gzip.write(fields.serialized());

    const int64_t site_key = builder.string_index("site");
    ReportOptions every_row = input.options;
    every_row.top = 0;
    every_row.min_live_bytes = 0;
    const RowSelection selection = selected_rows(snapshot, every_row, input.symbolizer);
    for_each_ranked_row(snapshot, selection, every_row, [&](const ReportRow& row) {
        const std::vector<uint64_t> locations =
            builder.location_ids(row_frames(row, input.symbolizer, input.options.hide_runtime));
        const int64_t values[] = {as_value(row.counters.live_bytes()), as_value(row.counters.live_blocks()),
                                  as_value(row.counters.alloc_bytes), as_value(row.counters.allocs)};
        ProtoMessage sample_message;
        sample_message.numbers(sample::kLocationId, std::span<const uint64_t>(locations))
            .numbers(sample::kValue, std::span<const int64_t>(values))
            .message(sample::kLabel,
                     ProtoMessage().number(label::kKey, site_key).number(label::kNum, uint64_t{row.id}));
        gzip.write(ProtoMessage().message(profile::kSample, sample_message).serialized());
    });
    gzip.finish();
}

}  // namespace leakwrap
