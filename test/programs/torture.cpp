// Eight threads hammer the whole malloc family from a fixed set of named call sites, hand blocks
// to each other through a shared queue so that most frees happen on another thread, and keep
// their own ground truth per site. Once the threads are joined the program prints that truth as
// JSON lines, one per site, and says READY: every site's counters in the report must equal it.
//
//   torture <seconds> [fork]
//
// With `fork`, the main thread forks halfway while a churn thread is allocating and freeing;
// the child adopts every block of the parent and runs the second half with threads of its own,
// as does the parent. The child prints its truth first, then the parent; each line names its
// pid. The child leaves out torture_churn, whose operation in flight at the fork is unknowable.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "handshake.h"

namespace {

enum Site : unsigned char { kMalloc, kCalloc, kRealloc, kPosixMemalign, kAlignedAlloc, kChurn, kSiteCount };

// The names of the functions below: the report must show each of them as the allocating frame.
constexpr const char* kSiteFunction[kSiteCount] = {"torture_malloc",         "torture_calloc",        "torture_realloc",
                                                   "torture_posix_memalign", "torture_aligned_alloc", "torture_churn"};

struct SiteTruth {
    std::atomic<long long> live_blocks{0}, live_bytes{0}, allocs{0}, frees{0};
};
std::array<SiteTruth, kSiteCount> g_truth;

struct Block {
    void* address;
    std::size_t size;  // as counted by leakwrap: the size the program asked for
    Site site;
};

void count_alloc(const Block& block) {
    SiteTruth& truth = g_truth[block.site];
    truth.allocs.fetch_add(1, std::memory_order_relaxed);
    truth.live_blocks.fetch_add(1, std::memory_order_relaxed);
    truth.live_bytes.fetch_add(static_cast<long long>(block.size), std::memory_order_relaxed);
}

void count_free(const Block& block) {
    SiteTruth& truth = g_truth[block.site];
    truth.frees.fetch_add(1, std::memory_order_relaxed);
    truth.live_blocks.fetch_sub(1, std::memory_order_relaxed);
    truth.live_bytes.fetch_sub(static_cast<long long>(block.size), std::memory_order_relaxed);
}

}  // namespace

// The call sites. Each one is its own frame (noinline, and the build forbids tail calls), so
// the report attributes every block to exactly one of these names.
extern "C" {

__attribute__((noinline)) void* torture_malloc(std::size_t size) { return std::malloc(size); }

__attribute__((noinline)) void* torture_calloc(std::size_t count, std::size_t size) { return std::calloc(count, size); }

__attribute__((noinline)) void* torture_realloc(void* block, std::size_t size) { return std::realloc(block, size); }

__attribute__((noinline)) void* torture_posix_memalign(std::size_t alignment, std::size_t size) {
    void* block = nullptr;
    return posix_memalign(&block, alignment, size) == 0 ? block : nullptr;
}

__attribute__((noinline)) void* torture_aligned_alloc(std::size_t alignment, std::size_t size) {
    return std::aligned_alloc(alignment, size);
}

// Allocates and frees one block at a time until told to stop; in the fork run it is the
// allocation in flight when the main thread forks.
__attribute__((noinline)) void torture_churn(const std::atomic<bool>& stop) {
    std::minstd_rand random(7);
    while (!stop.load(std::memory_order_relaxed)) {
        const std::size_t size = 16 + random() % 300;
        const Block block{std::malloc(size), size, kChurn};
        if (block.address == nullptr) fail("malloc in torture_churn");
        count_alloc(block);
        std::free(block.address);
        count_free(block);
    }
}

}  // extern "C"

namespace {

constexpr int kThreads = 8;
// Bound the memory held (some 30 MB): past them, threads only free.
constexpr std::size_t kMaxBlocksPerThread = 500;
constexpr std::size_t kMaxBlocksQueued = 4000;

// Blocks on their way to another thread.
std::mutex g_queue_mutex;
std::deque<Block> g_queue;

// Each worker slot's own blocks. Slots outlive the threads, so the second half of a run (and a
// forked child) carries on with the blocks of the first.
std::array<std::vector<Block>, kThreads> g_owned;

std::size_t random_size(std::mt19937& random) {
    switch (random() % 128) {
        case 0: return 0;
        case 1: return 128 * 1024 + random() % (128 * 1024);  // glibc serves these with mmap
        default: return 1 + random() % 2048;
    }
}

std::size_t random_alignment(std::mt19937& random) { return std::size_t{16} << (random() % 9); }

Block allocate(std::mt19937& random) {
    constexpr Site kAllocatingSites[] = {kMalloc, kCalloc, kPosixMemalign, kAlignedAlloc};
    const Site site = kAllocatingSites[random() % std::size(kAllocatingSites)];
    const std::size_t size = random_size(random);
    Block block{nullptr, size, site};
    switch (site) {
        case kMalloc: block.address = torture_malloc(size); break;
        case kCalloc: {
            const std::size_t count = 1 + random() % 8, element = size / 8 + 1;
            block.size = count * element;
            block.address = torture_calloc(count, element);
            break;
        }
        case kPosixMemalign: block.address = torture_posix_memalign(random_alignment(random), size); break;
        case kAlignedAlloc: {
            const std::size_t alignment = random_alignment(random);
            block.size = (size + alignment - 1) / alignment * alignment;  // C11 wants a multiple
            block.address = torture_aligned_alloc(alignment, block.size);
            break;
        }
        default: fail("not an allocating site");
    }
    if (block.address == nullptr) fail(kSiteFunction[site]);
    if (block.size > 0) static_cast<volatile unsigned char*>(block.address)[block.size - 1] = 1;
    return block;
}

// realloc is a free of the old block at its own site and an allocation at torture_realloc.
Block resize(const Block& old, std::mt19937& random) {
    const std::size_t size = 1 + random_size(random);  // realloc(p, 0) would free
    void* address = torture_realloc(old.address, size);
    if (address == nullptr) fail("torture_realloc");
    return Block{address, size, kRealloc};
}

void release(const Block& block) {
    std::free(block.address);
    count_free(block);
}

void work(int slot, unsigned seed, std::chrono::steady_clock::time_point until) {
    std::mt19937 random(seed);
    std::vector<Block>& owned = g_owned[slot];
    for (long step = 0; step % 256 != 0 || std::chrono::steady_clock::now() < until; ++step) {
        const unsigned choice = random() % 10;
        if (choice < 4) {
            if (owned.size() >= kMaxBlocksPerThread) continue;
            const Block block = allocate(random);
            count_alloc(block);
            owned.push_back(block);
        } else if (choice < 6) {
            std::lock_guard lock(g_queue_mutex);
            if (owned.empty() || g_queue.size() >= kMaxBlocksQueued) continue;
            g_queue.push_back(owned.back());
            owned.pop_back();
        } else if (choice < 8) {
            std::unique_lock lock(g_queue_mutex);
            if (g_queue.empty()) continue;
            const Block block = g_queue.front();
            g_queue.pop_front();
            lock.unlock();
            release(block);  // most likely a block another thread allocated
        } else if (!owned.empty()) {
            const std::size_t index = random() % owned.size();
            if (choice == 8) {
                const Block resized = resize(owned[index], random);
                count_free(owned[index]);
                count_alloc(resized);
                owned[index] = resized;
            } else {
                release(owned[index]);
                owned[index] = owned.back();
                owned.pop_back();
            }
        }
    }
}

// Runs the workers for `duration` and joins them.
void run_workers(unsigned seed, std::chrono::steady_clock::duration duration) {
    const auto until = std::chrono::steady_clock::now() + duration;
    std::vector<std::thread> workers;
    for (int slot = 0; slot < kThreads; ++slot)
        workers.emplace_back(work, slot, seed + static_cast<unsigned>(slot), until);
    for (auto& worker : workers) worker.join();
}

class ChurnThread {
public:
    ChurnThread() : thread_([this] { torture_churn(stop_); }) {}
    ~ChurnThread() {
        stop_.store(true);
        thread_.join();
    }

private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

void print_truth(bool with_churn) {
    for (int site = 0; site < kSiteCount; ++site) {
        if (site == kChurn && !with_churn) continue;
        const SiteTruth& truth = g_truth[site];
        std::printf(
            "{\"pid\": %d, \"function\": \"%s\", \"live_blocks\": %lld, "
            "\"live_bytes\": %lld, \"allocs\": %lld, \"frees\": %lld}\n",
            static_cast<int>(getpid()), kSiteFunction[site], truth.live_blocks.load(), truth.live_bytes.load(),
            truth.allocs.load(), truth.frees.load());
    }
    std::fflush(stdout);
}

void run_without_fork(std::chrono::steady_clock::duration duration) {
    {
        ChurnThread churn;
        run_workers(1, duration);
    }
    print_truth(true);
    announce_ready_and_wait_for_release();
}

// The child reports first and then waits for the parent's release: closing release_child.
void run_with_fork(std::chrono::steady_clock::duration duration) {
    int done[2], release_child[2];
    if (pipe(done) != 0 || pipe(release_child) != 0) fail("pipe");
    std::fflush(stdout);  // else the child would print the parent's buffered output again
    pid_t child;
    {
        ChurnThread churn;
        run_workers(1, duration / 2);
        child = fork();
        if (child < 0) fail("fork");
        if (child == 0) {
            close(done[0]);
            close(release_child[1]);
            // The churn thread did not come across; its object must not be joined here.
            run_workers(2, duration / 2);
            print_truth(false);
            if (write(done[1], "x", 1) != 1) fail("child: write done");
            char byte;
            if (read(release_child[0], &byte, 1) != 0) fail("child: data on the release pipe");
            std::_Exit(0);
        }
        close(done[1]);
        close(release_child[0]);
        run_workers(3, duration / 2);
    }
    char byte;
    if (read(done[0], &byte, 1) != 1) fail("parent: the child died before finishing");
    print_truth(true);
    announce_ready_and_wait_for_release();
    close(release_child[1]);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("the child failed");
}

}  // namespace

int main(int argc, char** argv) {
    const bool with_fork = argc == 3 && std::strcmp(argv[2], "fork") == 0;
    const double seconds = argc >= 2 ? std::atof(argv[1]) : 0;
    if (seconds <= 0 || (argc == 3 && !with_fork) || argc > 3) {
        std::fprintf(stderr, "usage: %s <seconds> [fork]\n", argv[0]);
        return 2;
    }
    const auto duration =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    if (with_fork)
        run_with_fork(duration);
    else
        run_without_fork(duration);
    return 0;
}
