#include "report_openmetrics.h"

#include "report_folded.h"
#include "report_labels.h"

#include <algorithm>
#include <cstdint>
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

// OpenMetrics escapes exactly these three in a label value.
std::string escaped_label_value(std::string_view text) {
    std::string escaped;
    for (const char c : valid_utf8(text)) {
        if (c == '\\') escaped += "\\\\";
        else if (c == '"') escaped += "\\\"";
        else if (c == '\n') escaped += "\\n";
        else escaped += c;
    }
    return escaped;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
    Labels labels;
    uint64_t value;
};

class Exposition {
public:
    Exposition(std::ostream& out, int32_t pid) : out_(out), pid_(std::to_string(pid)) {}

    // One family: its metadata, then all its samples, as OpenMetrics requires.
    void family(std::string_view name, std::string_view type, std::string_view unit,
                std::string_view help, const std::vector<Sample>& samples) {
        out_ << "# TYPE " << name << ' ' << type << '\n';
        if (!unit.empty()) out_ << "# UNIT " << name << ' ' << unit << '\n';
        out_ << "# HELP " << name << ' ' << help << '\n';
        const std::string_view suffix = type == "counter" ? "_total" : "";
        for (const Sample& sample : samples) {
            out_ << name << suffix << "{pid=\"" << pid_ << '"';
            for (const auto& [label, value] : sample.labels)
                out_ << ',' << label << "=\"" << escaped_label_value(value) << '"';
            out_ << "} " << sample.value << '\n';
        }
    }

    void end() { out_ << "# EOF\n"; }

private:
    std::ostream& out_;
    std::string pid_;
};

std::vector<Sample> bin_live_bytes(const Snapshot& snapshot) {
    std::vector<Sample> samples;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class) {
        const Counters& bin = snapshot.bins[size_class];
        if (bin.allocs == 0) continue;
        const auto limit = size_class_limit_bytes(size_class);
        samples.push_back(
            {{{"class_limit", limit ? std::to_string(*limit) : "+Inf"}}, bin.live_bytes()});
    }
    return samples;
}

Labels row_labels(const ReportRow& row, Symbolizer& symbolizer) {
    // The innermost frame that is not the Ruby location names the site, as in the text report;
    // the Ruby location has a label of its own.
    const auto frames = row_frames(row, symbolizer);
    const auto function = std::find_if(frames.begin(), frames.end(),
                                       [](const RowFrame& frame) { return frame.ruby == nullptr; });
    Labels labels = {{"site", std::to_string(row.id)},
                     {"function", function == frames.end() ? kNoStackFrame : function->name}};
    if (row.innermost_ruby()) labels.emplace_back("ruby", ruby_location_text(*row.innermost_ruby()));
    return labels;
}

}  // namespace

void write_openmetrics_report(std::ostream& out, const ReportInput& input) {
    const Snapshot& snapshot = input.snapshot;
    const Counters& totals = snapshot.totals;
    Exposition exposition(out, snapshot.pid);
    exposition.family("leakwrap_live_bytes", "gauge", "bytes",
                      "Bytes allocated and not freed, in the whole process.",
                      {{{}, totals.live_bytes()}});
    exposition.family("leakwrap_live_blocks", "gauge", "",
                      "Blocks allocated and not freed, in the whole process.",
                      {{{}, totals.live_blocks()}});
    exposition.family("leakwrap_allocations", "counter", "",
                      "Allocations since the process started.", {{{}, totals.allocs}});
    exposition.family("leakwrap_frees", "counter", "", "Frees since the process started.",
                      {{{}, totals.frees}});
    exposition.family("leakwrap_bin_live_bytes", "gauge", "bytes",
                      "Live bytes in blocks of a size class, by its inclusive upper limit.",
                      bin_live_bytes(snapshot));
    // Only a live process has an RSS; post mortem the families are left out, never zero.
    if (const auto& memory = snapshot.memory) {
        exposition.family("leakwrap_process_resident_bytes", "gauge", "bytes",
                          "The process's resident set as the kernel splits it "
                          "(/proc/PID/status RssAnon, RssFile, RssShmem).",
                          {{{{"kind", "anon"}}, memory->rss_anon},
                           {{{"kind", "file"}}, memory->rss_file},
                           {{{"kind", "shmem"}}, memory->rss_shmem}});
        exposition.family("leakwrap_segment_resident_bytes", "gauge", "bytes",
                          "Resident bytes of leakwrap's own segment in the process (part of "
                          "its shmem RSS).",
                          {{{}, memory->segment_resident}});
    }

    const auto rows = report_rows(snapshot, input.options.by);
    std::vector<Sample> live_bytes, live_blocks;
    for (const ReportRow* row : ranked_rows(rows, input.options)) {
        const Labels labels = row_labels(*row, input.symbolizer);
        live_bytes.push_back({labels, row->counters.live_bytes()});
        live_blocks.push_back({labels, row->counters.live_blocks()});
    }
    const std::string_view estimated =
        snapshot.sampled() ? " Estimated from samples (LEAKWRAP_SAMPLE)." : "";
    exposition.family("leakwrap_site_live_bytes", "gauge", "bytes",
                      "Live bytes allocated at a call site, for the top sites." +
                          std::string(estimated),
                      live_bytes);
    exposition.family("leakwrap_site_live_blocks", "gauge", "",
                      "Live blocks allocated at a call site, for the top sites." +
                          std::string(estimated),
                      live_blocks);
    exposition.end();
}

}  // namespace leakwrap
