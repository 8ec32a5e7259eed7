// libleakwrap.so's lock-free recording paths under concurrency, driven in-process without
// LD_PRELOAD (recording.h): the site table (lookup, the atomic claim of slots, insertion races,
// the overflow sites of a full table), the site counters, the bin shards (owned by one thread
// each, and the shared atomic shard beyond them), the string pool, module rescans while a
// library is loaded and unloaded, and the reader copying the segment while it is written.
//
// Ground truth: every thread tallies what it recorded, keyed by the site index it got back
// (what a block header carries to free()); at the end the reader's copy of the segment must
// equal the tallies exactly, site by site and bin by bin. Built and run in every build; with
// -DLEAKWRAP_SANITIZE=thread (scripts/tsan.sh) ThreadSanitizer watches the same runs for races.
#include "recording.h"

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
#include <utility>
#include <vector>

#include "segment_file.h"

namespace layout = leakwrap::layout;
namespace recording = leakwrap::recording;

// Under -DLEAKWRAP_SANITIZE=ON (LeakSanitizer): each test starts a recording with a site table of
// its own, and the preload has no way to destroy the previous one (a process never needs one),
// so the binary run as a whole (not one test per process, as CTest runs it) leaves liburcu's
// tables of the earlier tests behind.
extern "C" __attribute__((visibility("default"))) const char* __lsan_default_suppressions() {
    return "leak:liburcu-cds.so\n";
}

// The call sites. Each is a function of its own that is never inlined, and the asm keeps its
// call to record_allocation a call (not a jump), so the site's innermost frame is in it; the rest
// of the stack is the thread's, the same in every worker. A named namespace: the executable
// exports them (ENABLE_EXPORTS), so dladdr() can check that a site names the right function.
// Each body stores a constant of its own, so that identical code folding cannot merge them.
namespace lockfree_sites {

std::atomic<uint32_t> g_sink{0};

template <int Id>
__attribute__((noinline)) uint32_t call_site(uint64_t size) {
    g_sink.store(Id, std::memory_order_relaxed);
    uint32_t site = recording::record_allocation(size);
    asm volatile("" : "+r"(site));
    return site;
}

// One call site reached from two callers whose frames are alike (same size, same caller): the
// call of record_allocation has the same return address and stack pointer from both, and only a
// return address further out tells them apart.
__attribute__((noinline)) uint32_t shared_leaf(uint64_t size) {
    g_sink.store(1000, std::memory_order_relaxed);
    uint32_t site = recording::record_allocation(size);
    asm volatile("" : "+r"(site));
    return site;
}

template <int Id>
__attribute__((noinline)) uint32_t caller_of_leaf(uint64_t size) {
    g_sink.store(2000 + Id, std::memory_order_relaxed);
    uint32_t site = shared_leaf(size);
    asm volatile("" : "+r"(site));
    return site;
}

}  // namespace lockfree_sites

namespace {

using SiteFunction = uint32_t (*)(uint64_t);

constexpr int kThreads = 8;
constexpr int kRounds = 1500;

// Every worker allocates from all shared sites and from its own private ones, every round.
struct SiteSpec {
    SiteFunction function;
    uint64_t size;
};
// The last shared site allocates from the first one's function, in another size class: one
// stack with two sites, which all threads race to add to its chain.
constexpr int kSharedSites = 4;
constexpr int kPrivateSitesPerThread = 2;
constexpr int kLogicalSites = kSharedSites + kThreads * kPrivateSitesPerThread;

template <std::size_t... Id>
constexpr std::array<SiteFunction, sizeof...(Id)> site_functions(std::index_sequence<Id...>) {
    return {&lockfree_sites::call_site<static_cast<int>(Id)>...};
}
constexpr auto kSiteFunctions = site_functions(std::make_index_sequence<kLogicalSites>());

// Logical site 0..kSharedSites-1: shared; then kPrivateSitesPerThread per thread.
SiteSpec site_spec(int logical) {
    static constexpr uint64_t kSharedSizes[kSharedSites] = {24, 200, 3000, 500};
    if (logical == kSharedSites - 1) return {kSiteFunctions[0], kSharedSizes[logical]};
    if (logical < kSharedSites) return {kSiteFunctions[logical], kSharedSizes[logical]};
    int thread = (logical - kSharedSites) / kPrivateSitesPerThread;
    int which = (logical - kSharedSites) % kPrivateSitesPerThread;
    uint64_t size = which == 0 ? 40 + 8 * thread : 1000 + 100 * thread;
    return {kSiteFunctions[logical], size};
}
int private_site(int thread, int which) { return kSharedSites + thread * kPrivateSitesPerThread + which; }

struct Counts {
    uint64_t allocs = 0, frees = 0, alloc_bytes = 0, free_bytes = 0;
    bool operator==(const Counts&) const = default;
    Counts& operator+=(const Counts& o) {
        allocs += o.allocs;
        frees += o.frees;
        alloc_bytes += o.alloc_bytes;
        free_bytes += o.free_bytes;
        return *this;
    }
    bool fits_in(const Counts& o) const {
        return allocs <= o.allocs && frees <= o.frees && alloc_bytes <= o.alloc_bytes &&
               free_bytes <= o.free_bytes;
    }
    Counts max_with(const Counts& o) const {
        return {std::max(allocs, o.allocs), std::max(frees, o.frees),
                std::max(alloc_bytes, o.alloc_bytes), std::max(free_bytes, o.free_bytes)};
    }
};

std::ostream& operator<<(std::ostream& out, const Counts& c) {
    return out << "{allocs " << c.allocs << ", frees " << c.frees << ", alloc_bytes "
               << c.alloc_bytes << ", free_bytes " << c.free_bytes << "}";
}

Counts counts_of(const leakwrap::Counters& c) { return {c.allocs, c.frees, c.alloc_bytes, c.free_bytes}; }

// What one thread recorded, by site index and by size class.
struct Tally {
    std::map<uint32_t, Counts> sites;
    std::map<uint32_t, Counts> classes;

    void allocated(uint32_t site, uint64_t size) {
        Counts& s = sites[site];
        Counts& c = classes[layout::size_class_of(size)];
        ++s.allocs, ++c.allocs;
        s.alloc_bytes += size, c.alloc_bytes += size;
    }
    void freed(uint32_t site, uint64_t size) {
        Counts& s = sites[site];
        Counts& c = classes[layout::size_class_of(size)];
        ++s.frees, ++c.frees;
        s.free_bytes += size, c.free_bytes += size;
    }
    Tally& operator+=(const Tally& other) {
        for (const auto& [site, counts] : other.sites) sites[site] += counts;
        for (const auto& [size_class, counts] : other.classes) classes[size_class] += counts;
        return *this;
    }
};

struct Block {
    uint32_t site;
    uint64_t size;
};

Block allocate(SiteFunction function, uint64_t size, Tally& tally) {
    uint32_t site = function(size);
    tally.allocated(site, size);
    return {site, size};
}

void release(const Block& block, Tally& tally) {
    recording::record_free(block.site, block.size);
    tally.freed(block.site, block.size);
}

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

std::map<uint32_t, Counts> site_counts(const leakwrap::Snapshot& snapshot) {
    std::map<uint32_t, Counts> counts;
    for (const auto& site : snapshot.sites) counts[site.id] = counts_of(site.counters());
    return counts;
}

std::map<uint32_t, Counts> bin_counts(const leakwrap::Snapshot& snapshot) {
    std::map<uint32_t, Counts> counts;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class)
        counts[size_class] = counts_of(snapshot.bins[size_class]);
    return counts;
}

// Drops all-zero entries, so that maps compare by what was counted.
std::map<uint32_t, Counts> nonzero(std::map<uint32_t, Counts> counts) {
    std::erase_if(counts, [](const auto& entry) { return entry.second == Counts{}; });
    return counts;
}

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
                fail("sites of class " + std::to_string(size_class) + " exceed its bin",
                     sites_by_class[size_class], counts);
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
        EXPECT_TRUE(counts.fits_in(limit))
            << "a concurrent copy showed " << what << " " << key << " at " << counts
            << ", more than it ever reached: " << limit;
    }
}

class LockFreePaths : public ::testing::Test {
protected:
    void start(recording::Options options = {}) {
        ASSERT_TRUE(recording::start(options)) << "cannot create the segment in /dev/shm";
    }
    void TearDown() override { recording::stop(); }

    leakwrap::Snapshot final_snapshot() { return leakwrap::read_segment_file(recording::segment_path()); }
};

// The workload of the main test and of the full-table test: kThreads workers, each allocating
// from the shared sites and its private ones every round; of each site's blocks, a third is freed
// by the allocating thread, a third by the next thread (through its mailbox), a third stays live.
struct Workload {
    std::array<Tally, kThreads> tallies;
    std::array<Mailbox, kThreads> mailboxes;
    // The index each thread first got for each logical site (-1: none yet), and how often a later
    // allocation from it got another one.
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
                if (first != block.site) ++changed_index[thread];
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
        auto allocate_in_plugin = reinterpret_cast<uint32_t (*)(uint32_t (*)(uint64_t), uint64_t)>(
            dlsym(plugin, "lockfree_plugin_allocate"));
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

bool names_function(uint64_t return_address, SiteFunction function) {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(return_address), &info) != 0 &&
           info.dli_saddr == reinterpret_cast<void*>(function);
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

    // One site per call site: a thread always got the same index for a logical site, the
    // threads the same one for a shared site, and the index's record names that call site.
    std::set<int64_t> distinct;
    for (int thread = 0; thread < kThreads; ++thread) {
        EXPECT_EQ(workload.changed_index[thread], 0) << "thread " << thread;
        for (int logical = 0; logical < kSharedSites; ++logical)
            EXPECT_EQ(workload.first_index[thread][logical], workload.first_index[0][logical])
                << "shared site " << logical << " in thread " << thread;
        for (int logical = 0; logical < kLogicalSites; ++logical) {
            int64_t index = workload.first_index[thread][logical];
            if (index < 0) continue;
            distinct.insert(index);
            ASSERT_FALSE(layout::is_overflow_site(static_cast<uint32_t>(index)));
            const layout::SiteRecord& record = recording::site(static_cast<uint32_t>(index));
            EXPECT_EQ(record.state, layout::kReady);
            EXPECT_EQ(record.size_class, layout::size_class_of(site_spec(logical).size));
            const layout::StackRecord& stack = recording::stack_of_site(static_cast<uint32_t>(index));
            EXPECT_EQ(stack.state, layout::kReady);
            ASSERT_GT(stack.native_depth, 1u);
            EXPECT_TRUE(names_function(recording::site_frames(static_cast<uint32_t>(index))[0],
                                       site_spec(logical).function))
                << "site " << index << " of logical site " << logical;
        }
    }
    EXPECT_EQ(distinct.size(), static_cast<size_t>(kLogicalSites));

    // The plugin's module was recorded by a rescan while the others recorded.
    bool plugin_recorded = std::any_of(snapshot.modules.begin(), snapshot.modules.end(), [](const auto& m) {
        return m.path == LEAKWRAP_LOCKFREE_PLUGIN;
    });
    EXPECT_TRUE(plugin_recorded);
    EXPECT_EQ(snapshot.lost_sites, 0u);
}

// A site table with room for 5 sites and 19 call sites racing for it: the slots are claimed
// atomically, the rest is counted in the overflow sites, and nothing is lost.
// The call-site cache fills an entry once a call keeps leading to the same site, and from then on
// trusts it only while every remembered return address is still in its slot: a caller that
// differs only further out must still get its own site, before the entry is filled, after, and
// when the two callers alternate.
TEST_F(LockFreePaths, TheCallSiteCacheTellsApartCallersThatDifferOnlyFurtherOut) {
    start();
    recording::enter_thread();
    constexpr int kCalls = 300;  // several times what fills an entry
    // One call expression for every call, so that everything but the caller is the same.
    std::vector<int> schedule(kCalls, 0);
    schedule.insert(schedule.end(), kCalls, 1);
    for (int call = 0; call < kCalls; ++call) schedule.insert(schedule.end(), {0, 1});
    const SiteFunction callers[] = {&lockfree_sites::caller_of_leaf<0>, &lockfree_sites::caller_of_leaf<1>};
    std::set<uint32_t> sites_of[2];
    for (int caller : schedule) sites_of[caller].insert(callers[caller](64));
    const std::set<uint32_t>& first_caller = sites_of[0];
    const std::set<uint32_t>& second_caller = sites_of[1];
    ASSERT_EQ(first_caller.size(), 1u);
    ASSERT_EQ(second_caller.size(), 1u);
    const uint32_t first = *first_caller.begin(), second = *second_caller.begin();
    ASSERT_NE(first, second);
    EXPECT_TRUE(names_function(recording::site_frames(first)[1], &lockfree_sites::caller_of_leaf<0>));
    EXPECT_TRUE(names_function(recording::site_frames(second)[1], &lockfree_sites::caller_of_leaf<1>));
    const leakwrap::Snapshot snapshot = final_snapshot();
    for (uint32_t site : {first, second}) {
        auto found = std::find_if(snapshot.sites.begin(), snapshot.sites.end(),
                                  [&](const leakwrap::Site& s) { return s.id == site; });
        ASSERT_NE(found, snapshot.sites.end());
        EXPECT_EQ(counts_of(found->counters()), (Counts{2 * kCalls, 0, 2 * kCalls * 64, 0})) << site;
    }
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

TEST_F(LockFreePaths, FullSiteTableLosesNoCount) {
    constexpr uint32_t kOrdinarySlots = 5;
    start({.depth = 16, .max_sites = layout::kMinSiteCapacity - 1 + kOrdinarySlots});
    Workload workload;
    const Tally truth = run_workload(/*plugin_loads=*/2, nullptr, workload);
    const leakwrap::Snapshot snapshot = final_snapshot();

    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);
    size_t ordinary = std::count_if(snapshot.sites.begin(), snapshot.sites.end(),
                                    [](const auto& site) { return !site.overflow(); });
    EXPECT_LE(ordinary, kOrdinarySlots);
    EXPECT_GE(snapshot.lost_sites, static_cast<uint64_t>(kLogicalSites + 1 - kOrdinarySlots));
}

// More threads alive at once than there are owned bin shards: the rest share the last shard with
// atomic adds. Then a second wave takes over the shards the first gave back, with the counts
// their earlier owners left in them.
TEST_F(LockFreePaths, ThreadsBeyondTheOwnedShardsShareOneAtomically) {
    start();
    constexpr int kManyThreads = 72;  // more than the 63 owned shards
    constexpr int kBlocks = 400;
    Tally truth;
    for (int wave_threads : {kManyThreads, kThreads}) {
        std::vector<Tally> tallies(wave_threads);
        std::barrier<> all_alive(wave_threads);
        std::vector<std::thread> threads;
        for (int thread = 0; thread < wave_threads; ++thread) {
            threads.emplace_back([&, thread] {
                recording::enter_thread();
                Tally& tally = tallies[thread];
                std::vector<Block> blocks;
                for (int i = 0; i < kBlocks; ++i) {
                    SiteSpec spec = site_spec(i % kSharedSites);
                    blocks.push_back(allocate(spec.function, spec.size, tally));
                    if (i == 0) all_alive.arrive_and_wait();  // every thread holds a shard now
                }
                for (size_t i = 0; i < blocks.size(); i += 2) release(blocks[i], tally);
            });
        }
        for (auto& thread : threads) thread.join();
        for (const Tally& tally : tallies) truth += tally;
    }
    const leakwrap::Snapshot snapshot = final_snapshot();
    EXPECT_EQ(nonzero(site_counts(snapshot)), truth.sites);
    EXPECT_EQ(nonzero(bin_counts(snapshot)), truth.classes);

    // The shared shard did count: 72 threads cannot all own one of 63.
    const layout::Header& h = recording::header();
    const auto* bins = reinterpret_cast<const layout::BinCounters*>(
        reinterpret_cast<const std::byte*>(&h) + h.bins_offset);
    uint64_t shared_shard_allocs = 0;
    for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class)
        shared_shard_allocs += bins[layout::bin_index(size_class, h.bin_shards - 1)].allocs;
    EXPECT_GE(shared_shard_allocs, static_cast<uint64_t>(kManyThreads - (h.bin_shards - 1)));
}

// Threads interning strings at once get disjoint ranges of the pool, each holding its text.
TEST_F(LockFreePaths, StringPoolHandsOutDisjointIntactStrings) {
    start();
    constexpr int kStrings = 300;
    const uint32_t used_before = recording::header().strings_used;
    auto text_of = [](int thread, int i) {
        std::string text = "thread " + std::to_string(thread) + " string " + std::to_string(i) + " ";
        text.append(static_cast<size_t>((thread * 37 + i * 11) % 150), static_cast<char>('a' + thread));
        return text;
    };
    std::array<std::vector<layout::StringRef>, kThreads> refs;
    {
        std::barrier<> start_together(kThreads);
        std::vector<std::thread> threads;
        for (int thread = 0; thread < kThreads; ++thread) {
            threads.emplace_back([&, thread] {
                start_together.arrive_and_wait();
                for (int i = 0; i < kStrings; ++i) {
                    layout::StringRef ref{};
                    if (recording::intern(text_of(thread, i), &ref)) refs[thread].push_back(ref);
                }
            });
        }
        for (auto& thread : threads) thread.join();
    }
    uint64_t bytes = 0;
    std::vector<layout::StringRef> all;
    for (int thread = 0; thread < kThreads; ++thread) {
        ASSERT_EQ(refs[thread].size(), static_cast<size_t>(kStrings));
        for (int i = 0; i < kStrings; ++i) {
            const std::string expected = text_of(thread, i);
            EXPECT_EQ(recording::pooled(refs[thread][i]), expected);
            EXPECT_EQ(recording::pooled(refs[thread][i]).data()[expected.size()], '\0');
            bytes += expected.size() + 1;
            all.push_back(refs[thread][i]);
        }
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    for (size_t i = 1; i < all.size(); ++i)
        EXPECT_LE(all[i - 1].offset + all[i - 1].length + 1, all[i].offset) << "strings overlap";
    EXPECT_EQ(recording::header().strings_used, used_before + bytes);
}

}  // namespace
