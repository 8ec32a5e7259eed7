#include "watch.h"

#include "change_units.h"
#include "memory_growth.h"
#include "process_identity.h"
#include "report_json.h"
#include "report_labels.h"
#include "series.h"
#include "short_names.h"
#include "symbolizer.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <deque>
#include <optional>
#include <utility>
#include <vector>
#include <memory>

namespace leakwrap {
namespace {

using Clock = std::chrono::steady_clock;

double unix_seconds_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string local_clock_time() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    localtime_r(&now, &parts);
    char text[16];
    std::strftime(text, sizeof(text), "%H:%M:%S", &parts);
    return text;
}

// SIGINT and SIGTERM end a watch between two samples, never in the middle of a line: they are
// blocked for the watch and taken synchronously while it sleeps.
class StopSignals {
public:
    StopSignals() {
        sigemptyset(&stop_);
        sigaddset(&stop_, SIGINT);
        sigaddset(&stop_, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &stop_, &previous_);
    }
    // A signal that came during the last sample was a request to stop, which the watch did:
    // take it before restoring the mask, or it would kill the process on the way out.
    ~StopSignals() {
        const timespec no_wait{};
        while (sigtimedwait(&stop_, nullptr, &no_wait) > 0) {
        }
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // False if a stop signal arrived before the deadline. A deadline already past still takes a
    // pending signal: samples that take longer than the interval must not make a watch deaf.
    bool sleep_until(Clock::time_point deadline) {
        for (;;) {
            const auto left = std::max(deadline - Clock::now(), Clock::duration::zero());
            const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
            const timespec wait{static_cast<time_t>(seconds.count()),
                                static_cast<long>(std::chrono::nanoseconds(left - seconds).count())};
            if (sigtimedwait(&stop_, nullptr, &wait) > 0) return false;
            if (errno == EAGAIN) return true;
        }
    }

private:
    sigset_t stop_{};
    sigset_t previous_{};
};

bool same_modules(const std::vector<Module>& a, const std::vector<Module>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].unload_generation != b[i].unload_generation) return false;
    return true;
}

// Renders snapshots as the JSON report does, so that a series names and groups sites exactly like
// `leakwrap-report <pid> --format json`. Keeps its symbolizer (and so the DWARF it opened and the
// frames it resolved) from one sample to the next while the module list stays the same.
class SampleTaker {
public:
    SampleTaker(uint64_t min_bytes, FocusPatterns focus, SymbolizerOptions symbolizer_options)
        : min_bytes_(min_bytes), focus_(std::move(focus)), symbolizer_options_(symbolizer_options) {}

    // Writes the snapshot's series line to `series` site by site, each site also handed to
    // `on_site`, and returns the sample without its sites: a Sample of every site of a large
    // process (--min-bytes 0) would hold their labels and stack keys until its line was written.
    Sample take(const Snapshot& snapshot, std::ostream& series, const std::function<void(const SampleSite&)>& on_site) {
        if (!symbolizer_ || !same_modules(modules_, snapshot.modules)) {
            modules_ = snapshot.modules;
            symbolizer_ = std::make_unique<Symbolizer>(modules_, symbolizer_options_);
        }
        ReportOptions report_options;
        report_options.top = 0;
        report_options.format = ReportFormat::json;
        // Only the rows the series keeps are rendered: a Ruby process has tens of thousands of
        // sites, and rendering and parsing back all of them would take seconds a sample.
        report_options.min_live_bytes = min_bytes_;
        report_options.focus = focus_;
        // Taken in row by row: a document of every row would be many times the segment.
        Sample head;
        std::optional<SampleLineWriter> line;
        visit_json_report(
            {snapshot, OwnerState::alive, *symbolizer_, report_options},
            [&](const nlohmann::json& report) {
                head = sample_head_from_report(report, unix_seconds_now());
                line.emplace(series, head);
            },
            [&](const nlohmann::json& site) {
                if (const auto kept = sample_site_from_report(site, min_bytes_)) {
                    line->site(*kept);
                    on_site(*kept);
                }
            });
        line->end();
        return head;
    }

private:
    uint64_t min_bytes_;
    FocusPatterns focus_;
    SymbolizerOptions symbolizer_options_;
    std::vector<Module> modules_;
    std::unique_ptr<Symbolizer> symbolizer_;
};

}  // namespace

std::string gone_reason(pid_t pid, OwnerState state) {
    const std::string process = "process " + std::to_string(pid);
    switch (state) {
        case OwnerState::alive: break;
        case OwnerState::dead: return process + " died";
        case OwnerState::exited: return process + " exited";
        case OwnerState::stale: return "pid " + std::to_string(pid) + " now belongs to another process";
        case OwnerState::replaced: return process + " replaced its image by exec";
    }
    return process + " is running";
}

namespace {

// "15:40:12 sample 3: live 1.2 MiB, +340.0 KiB since start; RSS 9.1 MiB (anon 4.0 MiB,
// leakwrap's segment 196.0 KiB); top grower: f (a.c:3) +300.0 KiB"
// Takes a sample's sites one by one as its line is written (begin, site..., end).
class SummaryWriter {
public:
    explicit SummaryWriter(std::ostream& out) : out_(out) {}

    void begin(std::size_t number) {
        number_ = number;
        top_label_.reset();
        top_growth_ = 0;
    }

    void site(const SampleSite& site) {
        // At the first sample every site's growth is 0: none grows. A site that held nothing
        // then grows as one not seen then, so only the others are kept.
        if (number_ == 1) {
            if (site.counters.live_bytes == 0) return;
            if (site.id <= UINT32_MAX && site.counters.live_bytes < UINT32_MAX)
                start_.push_back({static_cast<uint32_t>(site.id), static_cast<uint32_t>(site.counters.live_bytes)});
            else
                wide_start_.emplace_back(site.id, site.counters.live_bytes);
            return;
        }
        const double growth =
            static_cast<double>(site.counters.live_bytes) - static_cast<double>(start_live_bytes(site.id));
        if (growth > top_growth_) {
            top_label_ = site.label;
            top_growth_ = growth;
        }
    }

    void end(const Sample& sample) {
        if (number_ == 1) {
            start_total_ = sample.totals.live_bytes;
            std::sort(start_.begin(), start_.end(), [](const Start& a, const Start& b) { return a.id < b.id; });
            std::sort(wide_start_.begin(), wide_start_.end());
        }
        out_ << local_clock_time() << " sample " << number_ << ": live " << human_bytes(sample.totals.live_bytes)
             << ", "
             << signed_human_bytes(static_cast<double>(sample.totals.live_bytes) - static_cast<double>(start_total_))
             << " since start; ";
        if (sample.memory)
            out_ << "RSS " << human_bytes(sample.memory->rss()) << " (anon " << human_bytes(sample.memory->rss_anon)
                 << ", leakwrap's segment " << human_bytes(sample.memory->segment_resident) << ", its tables "
                 << human_bytes(sample.memory->leakwrap_private)
                 << ")"
                 // Summed over a tree, RSS counts a shared page in each process.
                 << (sample.pids.empty() ? "" : "; PSS " + human_bytes(sample.memory->pss)) << "; ";
        if (const std::optional<MemoryParts> parts = explain_sample_memory(sample))
            out_ << "malloc keeps " << human_bytes(parts->free_in_heaps) << " free; ";
        out_ << "top grower: ";
        if (top_label_)
            out_ << short_site_label(*top_label_) << ' ' << signed_human_bytes(top_growth_);
        else
            out_ << "none";
        out_ << std::endl;
    }

private:
    struct Start {
        uint32_t id;
        uint32_t live_bytes;
    };

    uint64_t start_live_bytes(uint64_t id) const {
        if (id <= UINT32_MAX) {
            const auto start = std::lower_bound(start_.begin(), start_.end(), id,
                                                [](const Start& entry, uint64_t wanted) { return entry.id < wanted; });
            if (start != start_.end() && start->id == id) return start->live_bytes;
        }
        const auto wide = std::lower_bound(wide_start_.begin(), wide_start_.end(), std::make_pair(id, uint64_t{0}));
        return wide != wide_start_.end() && wide->first == id ? wide->second : 0;
    }

    std::ostream& out_;
    std::size_t number_ = 0;
    uint64_t start_total_ = 0;
    // Live bytes by row id at the first sample, of the rows that held any, sorted by id once it is
    // complete: 8 bytes a row (a Rails process has 32,000 such rows), and the rare row whose id
    // or bytes do not fit in 32 bits in `wide_start_`. A deque, as the number of rows is not known
    // beforehand: a vector grown by doubling takes up to twice their size and a copy.
    std::deque<Start> start_;
    std::vector<std::pair<uint64_t, uint64_t>> wide_start_;
    std::optional<std::string> top_label_;
    double top_growth_ = 0;
};

}  // namespace

WatchResult watch_process(const WatchOptions& options, const ProcessReader& read_process, std::ostream& series,
                          std::ostream& summary) {
    StopSignals stop_signals;
    SampleTaker taker(options.min_bytes, options.focus, options.symbolizer);
    SummaryWriter summary_writer(summary);
    WatchResult result;
    // The last snapshot sampled without its sites and modules, to tell what became of its
    // process: two whole snapshots of a Rails process at once were twice the memory of one.
    Snapshot previous;
    const Clock::time_point start = Clock::now();
    // A sample that took longer than the interval delays the next one instead of bunching them.
    for (Clock::time_point next = start;; next = std::max(next + options.interval, Clock::now())) {
        if (options.count && result.samples >= *options.count) {
            result.stop_reason = "--count reached";
            return result;
        }
        if (options.duration && next - start > *options.duration) {
            result.stop_reason = "--duration reached";
            return result;
        }
        if (result.samples > 0 && !stop_signals.sleep_until(next)) {
            result.stop_reason = "interrupted";
            return result;
        }
        Snapshot snapshot;
        try {
            snapshot = read_process(options.pid);
        } catch (const std::exception&) {
            // A process that exits normally takes its segment with it (unless LEAKWRAP_KEEP=1):
            // the end of the watch, not an error. Anything else, or a failing first read, is one.
            if (result.samples == 0 || owner_state(previous) == OwnerState::alive) throw;
            result.stop_reason = "process " + std::to_string(options.pid) + " exited";
            return result;
        }
        if (const OwnerState state = owner_state(snapshot); state != OwnerState::alive) {
            if (result.samples == 0)
                throw std::runtime_error(gone_reason(options.pid, state) + ": nothing to watch (see leakwrap-report " +
                                         std::to_string(options.pid) + " for its last state)");
            result.stop_reason = gone_reason(options.pid, state);
            return result;
        }
        summary_writer.begin(result.samples + 1);
        const Sample sample = taker.take(snapshot, series, [&](const SampleSite& site) { summary_writer.site(site); });
        series << std::endl;
        if (!series) throw std::runtime_error("cannot write the series");
        summary_writer.end(sample);
        ++result.samples;
        if (options.on_sample) options.on_sample(snapshot);
        snapshot.drop_sites();
        snapshot.modules = std::vector<Module>();
        snapshot.members = std::vector<TreeMember>();
        previous = std::move(snapshot);
    }
}

}  // namespace leakwrap
