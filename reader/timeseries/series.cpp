#include "series.h"

#include "report_labels.h"
#include "site_label.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace leakwrap {
namespace {

using nlohmann::json;

SampleCounters counters_from_json(const json& object) {
    return {
        .live_bytes = object.value("live_bytes", uint64_t{0}),
        .live_blocks = object.value("live_blocks", uint64_t{0}),
        .allocs = object.value("allocs", uint64_t{0}),
        .frees = object.value("frees", uint64_t{0}),
    };
}

// Reports before layout v2 have no bins; a series of such a process simply has none.
std::vector<SampleBin> bins_from_json(const json& sample) {
    std::vector<SampleBin> bins;
    for (const json& bin : sample.value("bins", json::array()))
        bins.push_back({bin.at("class").get<uint32_t>(), counters_from_json(bin)});
    return bins;
}

std::ifstream open_for_reading(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    return in;
}

bool is_report(const json& object) { return object.is_object() && object.contains("sites") && !object.contains("t"); }

// A report where a series belongs is the likely mistake: say which file is wanted.
std::runtime_error not_a_series(const std::filesystem::path& path) {
    return std::runtime_error(path.string() +
                              " is a report, not a series: give the file that `leakwrap-report "
                              "watch PID --out FILE` writes");
}

// A report's totals.allocator or a series line's "allocator"; none where it has none.
std::optional<AllocatorAccount> allocator_from_json(const json& object) {
    const auto allocator = object.find("allocator");
    if (allocator == object.end() || allocator->is_null()) return std::nullopt;
    return allocator_account_from_json(*allocator);
}

}  // namespace

Sample sample_head_from_report(const json& head, double t) {
    Sample sample{
        .t = t,
        .pid = head.at("pid").get<int64_t>(),
        .pids = {},
        .totals = counters_from_json(head.at("totals")),
        .memory = process_memory_from_json(head.at("totals").value("memory", json())),
        .allocator = allocator_from_json(head.at("totals")),
        .bins = bins_from_json(head),
        .sites = {},
        .stacks = true,
    };
    for (const json& process : head.value("processes", json::array()))
        sample.pids.push_back(process.at("pid").get<int64_t>());
    return sample;
}

std::optional<SampleSite> sample_site_from_report(const json& site, uint64_t min_live_bytes) {
    const SampleCounters counters = counters_from_json(site);
    if (counters.live_bytes < min_live_bytes) return std::nullopt;
    return SampleSite{site.at("id").get<uint64_t>(), site_label(site), site_stack_key(site), counters};
}

void add_report_site(Sample& sample, const json& site, uint64_t min_live_bytes) {
    if (auto kept = sample_site_from_report(site, min_live_bytes)) sample.sites.push_back(std::move(*kept));
}

Sample sample_from_report(const json& report, double t, uint64_t min_live_bytes) {
    Sample sample = sample_head_from_report(report, t);
    for (const json& site : report.at("sites")) add_report_site(sample, site, min_live_bytes);
    return sample;
}

namespace {

using ordered = nlohmann::ordered_json;

// Replace, not throw, on invalid UTF-8: labels come from paths and symbols of the process.
std::string line_text(const ordered& value) { return value.dump(-1, ' ', false, ordered::error_handler_t::replace); }

ordered with_counters(ordered object, const SampleCounters& counters) {
    object["live_bytes"] = counters.live_bytes;
    object["live_blocks"] = counters.live_blocks;
    object["allocs"] = counters.allocs;
    object["frees"] = counters.frees;
    return object;
}

}  // namespace

// Streamed, member by member and site by site: the document of a line with every site of a large
// process would be several times the line before it was written.
SampleLineWriter::SampleLineWriter(std::ostream& out, const Sample& head) : out_(out), stacks_(head.stacks) {
    ordered bins = ordered::array();
    for (const SampleBin& bin : head.bins) {
        const std::optional<uint64_t> limit = size_class_limit_bytes(bin.size_class);
        bins.push_back(with_counters({{"class", bin.size_class}, {"limit", limit ? ordered(*limit) : ordered(nullptr)}},
                                     bin.counters));
    }
    out_ << "{\"t\":" << line_text(head.t) << ",\"pid\":" << line_text(head.pid);
    if (!head.pids.empty()) out_ << ",\"pids\":" << line_text(head.pids);
    out_ << ",\"totals\":" << line_text(with_counters(ordered::object(), head.totals));
    if (head.memory) out_ << ",\"memory\":" << line_text(process_memory_json(head.memory));
    if (head.allocator) out_ << ",\"allocator\":" << line_text(allocator_account_json(*head.allocator));
    out_ << ",\"bins\":" << line_text(bins) << ",\"sites\":[";
}

void SampleLineWriter::site(const SampleSite& site) {
    ordered entry = with_counters({{"id", site.id}}, site.counters);
    entry["label"] = site.label;
    if (stacks_) entry["stack"] = site.stack_key;
    out_ << separator_ << line_text(entry);
    separator_ = ",";
}

void SampleLineWriter::end() { out_ << "]}"; }

SampleSite sample_site_from_json(const json& site, bool& has_stack) {
    // A report's site has frames to make a label and a key of; a series line's has both.
    if (!site.contains("label")) {
        has_stack = true;
        return {site.at("id").get<uint64_t>(), site_label(site), site_stack_key(site), counters_from_json(site)};
    }
    std::string label = site.at("label").get<std::string>();
    has_stack = site.contains("stack");
    std::string key = has_stack ? site.at("stack").get<std::string>() : label;
    return {site.at("id").get<uint64_t>(), std::move(label), std::move(key), counters_from_json(site)};
}

Sample sample_from_json(const json& object) {
    if (!object.contains("t")) return sample_from_report(object, 0, 0);
    Sample sample{
        .t = object.at("t").get<double>(),
        .pid = object.at("pid").get<int64_t>(),
        .pids = object.value("pids", std::vector<int64_t>{}),
        .totals = counters_from_json(object.at("totals")),
        .memory = process_memory_from_json(object.value("memory", json())),
        .allocator = allocator_from_json(object),
        .bins = bins_from_json(object),
        .sites = {},
    };
    sample.stacks = true;
    for (const auto& site : object.at("sites")) {
        bool has_stack = false;
        sample.sites.push_back(sample_site_from_json(site, has_stack));
        sample.stacks = sample.stacks && has_stack;
    }
    return sample;
}

std::vector<Sample> read_series(const std::filesystem::path& path) {
    std::ifstream in = open_for_reading(path);
    std::vector<Sample> series;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            const json object = json::parse(line);
            if (is_report(object)) throw not_a_series(path);
            series.push_back(sample_from_json(object));
        } catch (const json::exception& error) {
            // A pretty-printed report spans many lines, none of them a JSON object of its own.
            if (series.empty() && is_report(json::parse(open_for_reading(path), nullptr, false)))
                throw not_a_series(path);
            throw std::runtime_error(path.string() + ":" + std::to_string(number) +
                                     ": not a series line: " + error.what());
        }
    }
    return series;
}

}  // namespace leakwrap
