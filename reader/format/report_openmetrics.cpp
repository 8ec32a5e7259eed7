#include "report_openmetrics.h"

#include "memory_parts.h"
#include "report_folded.h"
#include "report_labels.h"
#include "row_selection.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <ranges>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leakwrap {
namespace {

// Label values must be UTF-8; paths and symbols are arbitrary bytes. An invalid byte becomes
// U+FFFD, so that one odd file name cannot make a scraper reject the whole exposition.
std::string valid_utf8(std::string_view text) {
    std::string result;
    for (std::size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t length = byte < 0x80           ? 1
                                   : (byte >> 5) == 0x6  ? 2
                                   : (byte >> 4) == 0xe  ? 3
                                   : (byte >> 3) == 0x1e ? 4
                                                         : 0;
        bool valid = length > 0 && i + length <= text.size();
        for (std::size_t k = 1; valid && k < length; ++k)
            valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
        if (valid) {
            result.append(text.substr(i, length));
            i += length;
        } else {
            result += "\xef\xbf\xbd";
            ++i;
        }
    }
    return result;
}

// Both formats escape exactly these three in a label value.
std::string escaped_label_value(std::string_view text) {
    std::string escaped;
    for (const char c : valid_utf8(text)) {
        if (c == '\\')
            escaped += "\\\\";
        else if (c == '"')
            escaped += "\\\"";
        else if (c == '\n')
            escaped += "\\n";
        else
            escaped += c;
    }
    return escaped;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
    Labels labels;
    uint64_t value;
};

struct Family {
    std::string_view name;  // without a counter's _total
    std::string_view type;
    std::string_view unit;  // OpenMetrics' UNIT; the name ends in it
    std::string_view help;
    std::vector<Sample> samples;
};

void write_family(std::ostream& out, const Family& family, MetricsDialect dialect) {
    if (family.samples.empty()) return;
    const std::string sample_name = std::string(family.name) + (family.type == "counter" ? "_total" : "");
    if (dialect == MetricsDialect::openmetrics) {
        out << "# TYPE " << family.name << ' ' << family.type << '\n';
        if (!family.unit.empty()) out << "# UNIT " << family.name << ' ' << family.unit << '\n';
        out << "# HELP " << family.name << ' ' << family.help << '\n';
    } else {
        out << "# HELP " << sample_name << ' ' << family.help << '\n';
        out << "# TYPE " << sample_name << ' ' << family.type << '\n';
    }
    for (const Sample& sample : family.samples) {
        out << sample_name << '{';
        for (std::size_t i = 0; i < sample.labels.size(); ++i)
            out << (i == 0 ? "" : ",") << sample.labels[i].first << "=\""
                << escaped_label_value(sample.labels[i].second) << '"';
        out << "} " << sample.value << '\n';
    }
}

Labels with(const Labels& process, Labels more) {
    more.insert(more.begin(), process.begin(), process.end());
    return more;
}

void add_bins(std::vector<Sample>& samples, const Labels& process, const Snapshot& snapshot) {
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class) {
        const Counters& bin = snapshot.bins[size_class];
        if (bin.allocs == 0) continue;
        const auto limit = size_class_limit_bytes(size_class);
        samples.push_back(
            {with(process, {{"class_limit", limit ? std::to_string(*limit) : "+Inf"}}), bin.live_bytes()});
    }
}

Labels row_labels(const ReportRow& row, Symbolizer& symbolizer) {
    Labels labels = {{"site", std::to_string(row.id)}};
    const auto frames = row_frames(row, symbolizer);
    const auto native_end =
        std::find_if(frames.begin(), frames.end(), [](const RowFrame& frame) { return !frame.native; });
    const auto named =
        innermost_frame_outside_runtimes(std::ranges::subrange(frames.begin(), native_end),
                                         [](const RowFrame& frame) { return frame.native->module.value_or(""); });
    // Every native frame in a runtime: the Ruby line names the site by itself, else the
    // innermost frame (or "[overflow]", "[no stack]") is the best there is.
    if (named != native_end)
        labels.emplace_back("function", named->name);
    else if (!row.innermost_ruby())
        labels.emplace_back("function", frames.front().name);
    if (row.innermost_ruby()) labels.emplace_back("ruby", ruby_location_text(*row.innermost_ruby()));
    return labels;
}

}  // namespace

std::string_view metrics_content_type(MetricsDialect dialect) {
    return dialect == MetricsDialect::openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                                  : "text/plain; version=0.0.4; charset=utf-8";
}

// Every family the exposition has, with the samples of the processes added so far.
struct MetricsExposition::Families {
    Family live_bytes{
        "leakwrap_live_bytes", "gauge", "bytes", "Bytes allocated and not freed, in the whole process.", {}};
    Family live_blocks{
        "leakwrap_live_blocks", "gauge", "", "Blocks allocated and not freed, in the whole process.", {}};
    Family allocations{"leakwrap_allocations", "counter", "", "Allocations since the process started.", {}};
    Family frees{"leakwrap_frees", "counter", "", "Frees since the process started.", {}};
    Family sample_interval{"leakwrap_sample_interval_bytes",
                           "gauge",
                           "bytes",
                           "LEAKWRAP_SAMPLE: 0 counts every allocation; otherwise the site values, "
                           "and under glibc the totals and bins too, are estimates from one sample per this "
                           "many bytes.",
                           {}};
    Family bins{"leakwrap_bin_live_bytes",
                "gauge",
                "bytes",
                "Live bytes in blocks of a size class, by its inclusive upper limit.",
                {}};
    // Only a live process has an RSS; post mortem its samples are left out, never zero.
    Family process_resident{"leakwrap_process_resident_bytes",
                            "gauge",
                            "bytes",
                            "The process's resident set as the kernel splits it "
                            "(/proc/PID/status RssAnon, RssFile, RssShmem).",
                            {}};
    Family proportional{"leakwrap_process_proportional_bytes",
                        "gauge",
                        "bytes",
                        "The process's proportional set (Pss summed over /proc/PID/smaps): each "
                        "resident page divided among the processes that map it, so that a tree's "
                        "processes add up.",
                        {}};
    Family segment_resident{"leakwrap_segment_resident_bytes",
                            "gauge",
                            "bytes",
                            "Resident bytes of leakwrap's own segment in the process (part of "
                            "its shmem RSS).",
                            {}};
    Family private_tables{"leakwrap_private_bytes",
                          "gauge",
                          "bytes",
                          "leakwrap's private tables in the process (its stack index, per-thread "
                          "memos; part of its anonymous RSS), as leakwrap counts them.",
                          {}};
    Family memory_parts{"leakwrap_memory_bytes",
                        "gauge",
                        "bytes",
                        "The process's resident set in parts that add up to it (RSS explained): "
                        "malloc's heaps as live blocks, their overhead and the free memory malloc "
                        "keeps; large mmap'd blocks, thread stacks, files, leakwrap, other anonymous.",
                        {}};
    Family allocator{"leakwrap_allocator_bytes",
                     "gauge",
                     "bytes",
                     "What the allocator below says of its own memory at its last reading (at most "
                     "a second old while the process allocates): in_use, free (kept by it), "
                     "returnable (what it would hand back: whole free pages for glibc, dirty pages "
                     "for jemalloc), system, mmapped, resident, metadata.",
                     {}};
    Family site_bytes{
        "leakwrap_site_live_bytes", "gauge", "bytes", "Live bytes allocated at a call site, for the top sites.", {}};
    Family site_blocks{
        "leakwrap_site_live_blocks", "gauge", "", "Live blocks allocated at a call site, for the top sites.", {}};
};

MetricsExposition::MetricsExposition() : families_(std::make_unique<Families>()) {}
MetricsExposition::~MetricsExposition() = default;

void MetricsExposition::add(const ReportInput& process) {
    Families& f = *families_;
    const Snapshot& snapshot = process.snapshot;
    const Labels labels_of_process = {
        {"pid", std::to_string(snapshot.pid)}, {"exe", snapshot.exe}, {"command", snapshot.command_line}};
    const Counters& totals = snapshot.totals;
    f.live_bytes.samples.push_back({labels_of_process, totals.live_bytes()});
    f.live_blocks.samples.push_back({labels_of_process, totals.live_blocks()});
    f.allocations.samples.push_back({labels_of_process, totals.allocs});
    f.frees.samples.push_back({labels_of_process, totals.frees});
    f.sample_interval.samples.push_back({labels_of_process, snapshot.sample_interval});
    add_bins(f.bins.samples, labels_of_process, snapshot);
    if (const auto& memory = snapshot.memory) {
        for (const auto& [kind, bytes] : {std::pair{"anon", memory->rss_anon}, std::pair{"file", memory->rss_file},
                                          std::pair{"shmem", memory->rss_shmem}})
            f.process_resident.samples.push_back({with(labels_of_process, {{"kind", kind}}), bytes});
        f.segment_resident.samples.push_back({labels_of_process, memory->segment_resident});
        if (snapshot.writer_private_bytes)
            f.private_tables.samples.push_back({labels_of_process, memory->leakwrap_private});
        f.proportional.samples.push_back({labels_of_process, memory->pss});
        if (const std::optional<MemoryParts> parts = explain_memory(snapshot))
            for (const auto& [part, bytes] : named_parts(*parts))
                f.memory_parts.samples.push_back({with(labels_of_process, {{"part", part}}), bytes});
    }
    if (const std::optional<AllocatorAccount> account = allocator_account(snapshot))
        for (const auto& [kind, bytes] :
             {std::pair{"in_use", account->in_use}, std::pair{"free", account->free},
              std::pair{"returnable", account->returnable}, std::pair{"system", account->system},
              std::pair{"mmapped", account->mmapped}, std::pair{"resident", account->resident},
              std::pair{"metadata", account->metadata}})
            f.allocator.samples.push_back(
                {with(labels_of_process, {{"allocator", account->allocator}, {"kind", kind}}), bytes});
    const RowSelection selection = selected_rows(snapshot, process.options, process.symbolizer);
    for_each_ranked_row(snapshot, selection, process.options, [&](const ReportRow& row) {
        const Labels labels = with(labels_of_process, row_labels(row, process.symbolizer));
        f.site_bytes.samples.push_back({labels, row.counters.live_bytes()});
        f.site_blocks.samples.push_back({labels, row.counters.live_blocks()});
    });
}

void MetricsExposition::write(std::ostream& out, MetricsDialect dialect) const {
    const Families& f = *families_;
    for (const Family* family : {&f.live_bytes, &f.live_blocks, &f.allocations, &f.frees, &f.sample_interval, &f.bins,
                                 &f.process_resident, &f.proportional, &f.segment_resident, &f.private_tables,
                                 &f.memory_parts, &f.allocator, &f.site_bytes, &f.site_blocks})
        write_family(out, *family, dialect);
    if (dialect == MetricsDialect::openmetrics) out << "# EOF\n";
}

void write_metrics(std::ostream& out, const std::vector<ReportInput>& processes, MetricsDialect dialect) {
    MetricsExposition exposition;
    for (const ReportInput& process : processes) exposition.add(process);
    exposition.write(out, dialect);
}

}  // namespace leakwrap
