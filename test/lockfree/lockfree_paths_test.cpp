// libleakwrap.so's lock-free recording paths under concurrency, driven in-process without
// LD_PRELOAD (recording.h): the site table (lookup, the atomic claim of slots, insertion races,
// the overflow sites of a full table), the site counters, the bin shards (owned by one thread
// each, and the shared atomic shard beyond them), the string pool, module rescans while a
// library is loaded and unloaded, and the reader copying the segment while it is written
// (lockfree_tables_test.cpp takes the call-site cache, the shards and the pool one at a time).
//
// Ground truth: every thread tallies what it recorded, keyed by the site index it got back
// (what a block header carries to free()); at the end the reader's copy of the segment must
// equal the tallies exactly, site by site and bin by bin. Built and run in every build; with
// -DLEAKWRAP_SANITIZE=thread (scripts/tsan.sh) ThreadSanitizer watches the same runs for races.
#include "lockfree_paths.h"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Under -DLEAKWRAP_SANITIZE=ON (LeakSanitizer): each test starts a recording with a site table of
// its own, and the preload has no way to destroy the previous one (a process never needs one),
// so the binary run as a whole (not one test per process, as CTest runs it) leaves liburcu's
// tables of the earlier tests behind.
extern "C" __attribute__((visibility("default"))) const char* __lsan_default_suppressions() {
    return "leak:liburcu-cds.so\n";
}

namespace lockfree {
namespace {

constexpr int kRounds = 1500;

int private_site(int thread, int which) { return kSharedSites + thread * kPrivateSitesPerThread + which; }

// Blocks another thread hands over for freeing, as in a producer/consumer program.
struct Mailbox {
    std::mutex mutex;
    std::vector<Block> blocks;

    void post(const Block& block) {
        std::lock_guard lock(mutex);
        blocks.push_back(block);
    }
    void free_all(Tally& tally) {
        std::vector<Block> taken;
        {
            std::lock_guard lock(mutex);
            taken.swap(blocks);
        }
        for (const Block& block : taken) release(block, tally);
    }
};

// Copies the segment with the real reader, over and over, while the workers write it. Every copy
// must parse; its bins only grow; within a copy, the sites of a size class show no more than its
// bin (the writer counts a block in its bin before its site, and the reader copies the sites
// first); and no copy shows more at a site or in a bin than the final truth (checked at the end
// with the largest counts seen).
class ConcurrentReader {
public:
    explicit ConcurrentReader(std::string path) : path_(std::move(path)) {
        thread_ = std::thread([this] { run(); });
    }
    // Takes one more copy, then stops.
    void finish() {
        stop_.store(true, std::memory_order_relaxed);
        thread_.join();
    }
    int copies() const { return copies_; }
    const std::vector<std::string>& failures() const { return failures_; }
    const std::map<uint32_t, Counts>& largest_sites() const { return largest_sites_; }
    const std::map<uint32_t, Counts>& largest_bins() const { return largest_bins_; }

private:
    void run() {
        do copy_once();
        while (!stop_.load(std::memory_order_relaxed) && failures_.size() < 10);
        copy_once();
    }

    void copy_once() {
        try {
            check(leakwrap::read_segment_file(path_));
        } catch (const std::exception& error) {
            failures_.push_back(std::string("copy ") + std::to_string(copies_) + ": " + error.what());
        }
        ++copies_;
    }

    void check(const leakwrap::Snapshot& snapshot) {
        const auto bins = bin_counts(snapshot);
        std::map<uint32_t, Counts> sites_by_class;
        for (const auto& site : snapshot.sites) {
            Counts counts = counts_of(site.counters());
            sites_by_class[site.size_class()] += counts;
            largest_sites_[site.id] = largest_sites_[site.id].max_with(counts);
        }
        for (const auto& [size_class, counts] : bins) {
            if (!previous_bins_[size_class].fits_in(counts))
                fail("bin " + std::to_string(size_class) + " shrank", previous_bins_[size_class], counts);
            if (!sites_by_class[size_class].fits_in(counts))
                fail("sites of class " + std::to_string(size_class) + " exceed its bin", sites_by_class[size_class],
                     counts);
            largest_bins_[size_class] = largest_bins_[size_class].max_with(counts);
        }
        previous_bins_ = bins;
    }

    void fail(const std::string& what, const Counts& a, const Counts& b) {
        std::ostringstream message;
        message << "copy " << copies_ << ": " << what << ": " << a << " vs " << b;
        failures_.push_back(message.str());
    }

    std::string path_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    int copies_ = 0;
    std::vector<std::string> failures_;
    std::map<uint32_t, Counts> previous_bins_, largest_sites_, largest_bins_;
};

void expect_no_reader_failures(const ConcurrentReader& reader) {
    EXPECT_GE(reader.copies(), 2);
    for (const auto& failure : reader.failures()) ADD_FAILURE() << "concurrent reader: " << failure;
}

void expect_within(const std::map<uint32_t, Counts>& largest, const std::map<uint32_t, Counts>& truth,
                   const char* what) {
    for (const auto& [key, counts] : largest) {
        auto found = truth.find(key);
        Counts limit = found == truth.end() ? Counts{} : found->second;
        EXPECT_TRUE(counts.fits_in(limit)) << "a concurrent copy showed " << what << " " << key << " at " << counts
                                           << ", more than it ever reached: " << limit;
    }
}

// Whether two site indexes are the records of one call site: the same stack and size class,
// perhaps of two birth cells (R9), as a workload that runs past a cell's end has.
bool same_call_site(int64_t a, int64_t b) {
    if (a == b) return true;
    if (a < 0 || b < 0 || layout::is_overflow_site(static_cast<uint32_t>(a)) ||
        layout::is_overflow_site(static_cast<uint32_t>(b)))
        return false;
    const layout::SiteRecord& first = recording::site(static_cast<uint32_t>(a));
    const layout::SiteRecord& second = recording::site(static_cast<uint32_t>(b));
    return first.stack == second.stack && first.size_class == second.size_class &&
           first.birth_cell != second.birth_cell;
}

// The workload of the main test and of the full-table test: kThreads workers, each allocating
// from the shared sites and its private ones every round; of each site's blocks, a third is freed
// by the allocating thread, a third by the next thread (through its mailbox), a third stays live.
struct Workload {
    std::array<Tally, kThreads> tallies;
    std::array<Mailbox, kThreads> mailboxes;
    // The index each thread first got for each logical site (-1: none yet), and how often a later
    // allocation from it got the record of another call site.
    std::array<std::array<int64_t, kLogicalSites>, kThreads> first_index{};
    std::array<int, kThreads> changed_index{};
    std::barrier<> start{kThreads + 1};  // the workers and the module loader
    std::barrier<> allocated{kThreads};

    Workload() {
        for (auto& row : first_index) row.fill(-1);
    }

    void work(int thread) {
        recording::enter_thread();
        Tally& tally = tallies[thread];
        std::vector<int> sites;
        for (int logical = 0; logical < kSharedSites; ++logical) sites.push_back(logical);
        for (int which = 0; which < kPrivateSitesPerThread; ++which) sites.push_back(private_site(thread, which));
        std::vector<Block> own;
        start.arrive_and_wait();
        for (int round = 0; round < kRounds; ++round) {
            for (int logical : sites) {
                SiteSpec spec = site_spec(logical);
                Block block = allocate(spec.function, spec.size, tally);
                int64_t& first = first_index[thread][logical];
                if (first < 0) first = block.site;
                if (!same_call_site(first, block.site)) ++changed_index[thread];
                switch ((round + logical) % 3) {
                    case 0: own.push_back(block); break;
                    case 1: mailboxes[(thread + 1) % kThreads].post(block); break;
                    default: break;  // stays live
                }
            }
            for (const Block& block : own) release(block, tally);
            own.clear();
            if (round % 16 == 15) mailboxes[thread].free_all(tally);
        }
        allocated.arrive_and_wait();
        mailboxes[thread].free_all(tally);
    }
};

// Loads and unloads a library while the workers record, allocating from inside it each time:
// new stacks in a new module, so recording them rescans the module list concurrently.
void load_and_unload_plugin(Workload& workload, Tally& tally, int loads) {
    recording::enter_thread();
    workload.start.arrive_and_wait();
    for (int load = 0; load < loads; ++load) {
        void* plugin = dlopen(LEAKWRAP_LOCKFREE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(plugin, nullptr) << dlerror();
        auto allocate_in_plugin =
            reinterpret_cast<uint32_t (*)(uint32_t(*)(uint64_t), uint64_t)>(dlsym(plugin, "lockfree_plugin_allocate"));
        ASSERT_NE(allocate_in_plugin, nullptr) << dlerror();
        for (int i = 0; i < 20; ++i) {
            constexpr uint64_t kSize = 7000;
            uint32_t site = allocate_in_plugin(&recording::record_allocation, kSize);
            tally.allocated(site, kSize);
            if (i % 2 == 0) release({site, kSize}, tally);
        }
        dlclose(plugin);
    }
}

Tally run_workload(int plugin_loads, ConcurrentReader* reader, Workload& workload) {
    Tally plugin_tally;
    std::vector<std::thread> threads;
    for (int thread = 0; thread < kThreads; ++thread)
        threads.emplace_back([&workload, thread] { workload.work(thread); });
    threads.emplace_back([&] { load_and_unload_plugin(workload, plugin_tally, plugin_loads); });
    for (auto& thread : threads) thread.join();
    if (reader != nullptr) reader->finish();
    Tally truth = plugin_tally;
    for (const Tally& tally : workload.tallies) truth += tally;
    return truth;
}

// Eight threads, shared and private sites, same-thread and cross-thread frees, a library loaded
// and unloaded meanwhile, and the reader copying all along: every site and every bin ends exact.
TEST_F(LockFreePaths, EightThreadsCountEverySiteAndBinExactly) {
    start();
    ConcurrentReader reader(recording::segment_path());
    Workload workload;
    const Tally truth = run_workload(/*plugin_loads=*/10, &reader, workload);
    const leakwrap::Snapshot snapshot = final_snapshot();

    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);
    expect_no_reader_failures(reader);
    expect_within(reader.largest_sites(), truth.sites, "site");
    expect_within(reader.largest_bins(), truth.classes, "bin");

    // One site per call site: a thread always got the same call site's records for a logical
    // site, the threads the same one for a shared site, and the record names that call site.
    std::set<int64_t> distinct;
    for (int thread = 0; thread < kThreads; ++thread) {
        EXPECT_EQ(workload.changed_index[thread], 0) << "thread " << thread;
        for (int logical = 0; logical < kSharedSites; ++logical)
            EXPECT_TRUE(same_call_site(workload.first_index[thread][logical], workload.first_index[0][logical]))
                << "shared site " << logical << " in thread " << thread;
        for (int logical = 0; logical < kLogicalSites; ++logical) {
            int64_t index = workload.first_index[thread][logical];
            if (index < 0) continue;
            ASSERT_FALSE(layout::is_overflow_site(static_cast<uint32_t>(index)));
            const layout::SiteRecord& record = recording::site(static_cast<uint32_t>(index));
            distinct.insert(int64_t{record.stack} << 8 | record.size_class);
            EXPECT_EQ(record.state, layout::kReady);
            EXPECT_EQ(record.size_class, layout::size_class_of(site_spec(logical).size));
            const layout::StackRecord& stack = recording::stack_of_site(static_cast<uint32_t>(index));
            EXPECT_EQ(stack.state, layout::kReady);
            ASSERT_GT(stack.native_depth, 1u);
            EXPECT_TRUE(
                names_function(recording::site_frames(static_cast<uint32_t>(index))[0], site_spec(logical).function))
                << "site " << index << " of logical site " << logical;
        }
    }
    EXPECT_EQ(distinct.size(), static_cast<size_t>(kLogicalSites)) << "call sites (stack, size class)";

    // The plugin's module was recorded by a rescan while the others recorded.
    bool plugin_recorded = std::any_of(snapshot.modules.begin(), snapshot.modules.end(),
                                       [](const auto& m) { return m.path == LEAKWRAP_LOCKFREE_PLUGIN; });
    EXPECT_TRUE(plugin_recorded);
    EXPECT_EQ(snapshot.lost_sites, 0u);
}

// Threads that fork at once each copy the segment in fork's prepare handler and drop the copy
// in its parent handler, all while other threads count. Each copy must stay its thread's own
// until dropped: 5a0a758's preload kept one for the process, so that one fork's drop unmapped
// the copy another was still filling or handing to its child, and the program crashed.
TEST_F(LockFreePaths, ForksFromSeveralThreadsAtOnceEachKeepTheirOwnCopy) {
    start();
    constexpr int kForkingThreads = 4;
    std::atomic<bool> counting_done{false};
    std::atomic<int> copies{0}, foreign_copies{0};
    std::atomic<uint64_t> counted_in_copies{0};
    std::vector<std::thread> forkers;
    for (int thread = 0; thread < kForkingThreads; ++thread) {
        forkers.emplace_back([&] {
            while (!counting_done.load()) {
                const std::byte* copy = recording::take_fork_copy();
                ASSERT_NE(copy, nullptr);
                const auto* h = reinterpret_cast<const layout::Header*>(copy);
                const uint32_t sites = std::min(h->sites_claimed, h->site_capacity);
                const auto* records = reinterpret_cast<const layout::SiteRecord*>(copy + h->sites_offset);
                std::this_thread::yield();  // other forks' copies come and go meanwhile
                // A site's counts are its record's and its delta entries' (the copy holds both).
                uint64_t allocs = 0;
                for (uint32_t site = 0; site < sites; ++site) allocs += records[site].allocs;
                const auto* deltas = reinterpret_cast<const layout::SiteDelta*>(copy + h->site_deltas_offset);
                for (uint64_t entry = 0; entry < uint64_t{h->bin_shards} * h->site_delta_slots; ++entry)
                    if (deltas[entry].site != layout::kNoDeltaSite) allocs += deltas[entry].allocs;
                counted_in_copies.fetch_add(allocs);
                if (std::memcmp(h->magic, layout::kMagic, sizeof h->magic) != 0) foreign_copies.fetch_add(1);
                recording::drop_fork_copy();
                copies.fetch_add(1);
            }
        });
    }
    Workload workload;
    const Tally truth = run_workload(/*plugin_loads=*/2, nullptr, workload);
    counting_done.store(true);
    for (auto& forker : forkers) forker.join();
    const leakwrap::Snapshot snapshot = final_snapshot();

    EXPECT_GT(copies.load(), kForkingThreads);
    EXPECT_EQ(foreign_copies.load(), 0);
    EXPECT_GT(counted_in_copies.load(), 0u);
    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);
}

// A site table with room for 5 sites and 19 call sites racing for it: the slots are claimed
// atomically, the rest is counted in the overflow sites, and nothing is lost.
TEST_F(LockFreePaths, FullSiteTableLosesNoCount) {
    constexpr uint32_t kOrdinarySlots = 5;
    start({.depth = 16, .max_sites = layout::kMinSiteCapacity - 1 + kOrdinarySlots});
    Workload workload;
    const Tally truth = run_workload(/*plugin_loads=*/2, nullptr, workload);
    const leakwrap::Snapshot snapshot = final_snapshot();

    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);
    size_t ordinary =
        std::count_if(snapshot.sites.begin(), snapshot.sites.end(), [](const auto& site) { return !site.overflow(); });
    EXPECT_LE(ordinary, kOrdinarySlots);
    EXPECT_GE(snapshot.lost_sites, static_cast<uint64_t>(kLogicalSites + 1 - kOrdinarySlots));
}

}  // namespace
}  // namespace lockfree
