// A series is what `watch` writes: one JSON line per sample of a process, each a snapshot reduced
// to what time analysis needs (totals, size-class bins, and the sites' counters with a readable
// label). `suspects` and `plot` read series; `diff` reads full reports into the same shape.
#pragma once

#include "allocator_account.h"
#include "process_memory.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace leakwrap {

struct SampleCounters {
    uint64_t live_bytes = 0;
    uint64_t live_blocks = 0;
    uint64_t allocs = 0;
    uint64_t frees = 0;
};

struct SampleSite {
    uint64_t id = 0;    // the report's row id: stable for the lifetime of one process
    std::string label;  // "function (file:line)", "ruby file:line", "[overflow]"
    // Names the same call stack in another process, where ids and addresses differ: every frame's
    // function and source line, and the Ruby location, when the sample came from a full report;
    // the label for a series line, which keeps no frames.
    std::string stack_key;
    SampleCounters counters;
};

struct SampleBin {
    uint32_t size_class = 0;
    SampleCounters counters;
};

struct Sample {
    double t = 0;  // unix seconds; 0 for a report, which does not say when it was taken
    int64_t pid = 0;
    // With --children, every process merged into the sample, the root first; empty otherwise.
    std::vector<int64_t> pids;
    SampleCounters totals;
    std::optional<ProcessMemory> memory;  // the kernel's view; none in series before it was kept
    // The allocator's own count (totals.allocator of a report); none before its first reading,
    // for a process tree, and in series before it was kept.
    std::optional<AllocatorAccount> allocator;
    std::vector<SampleBin> bins;    // the classes that ever had an allocation, ascending
    std::vector<SampleSite> sites;  // a series line keeps only sites at or above --min-bytes
    // Whether the sites' stack keys name their stacks: true for a report and for series lines
    // written with stacks; an older series line has only labels.
    bool stacks = false;
};

// Reduces a `--format json` report; sites with fewer than min_live_bytes live bytes are left out.
Sample sample_from_report(const nlohmann::json& report, double t, uint64_t min_live_bytes);
// The same in parts, for a report taken in row by row (visit_json_report): every member but the
// sites, then each site.
Sample sample_head_from_report(const nlohmann::json& head, double t);
void add_report_site(Sample& sample, const nlohmann::json& site, uint64_t min_live_bytes);
// A report's site as a sample keeps it; none if it holds fewer than min_live_bytes live bytes.
std::optional<SampleSite> sample_site_from_report(const nlohmann::json& site, uint64_t min_live_bytes);

// The series line: {"t", "pid", "pids" (with --children), "totals", "memory" and "allocator" (as
// in a report's totals), "bins": [{"class", "limit", "live_bytes", "live_blocks", "allocs",
// "frees"}], "sites": [{"id", "live_bytes", "live_blocks", "allocs", "frees", "label", "stack"}]}, keys in that order
// for people reading it. Lines written by earlier versions also end in "labels": {id: label}, the sites' labels again.
// It is written as it comes: the head (every member of `head` but its sites, which it
// should not have), then each site, then the end; nothing of a site is kept once written, since
// a line of every site of a large process, kept whole, is many times its segment.
class SampleLineWriter {
public:
    SampleLineWriter(std::ostream& out, const Sample& head);
    void site(const SampleSite& site);
    void end();

private:
    std::ostream& out_;
    bool stacks_;
    const char* separator_ = "";
};

// A series line, or a full report (told apart by the "t" that only series lines have).
Sample sample_from_json(const nlohmann::json& object);

// Every line of a series file, in order. Throws std::runtime_error naming the file and line.
std::vector<Sample> read_series(const std::filesystem::path& path);

// A site of a report or of a series line, as a sample keeps it; `has_stack` says whether its
// stack key names its stack (false for a series line written before lines kept stacks).
SampleSite sample_site_from_json(const nlohmann::json& site, bool& has_stack);

}  // namespace leakwrap
