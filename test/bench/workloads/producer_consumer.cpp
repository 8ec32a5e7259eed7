// xmalloc-style producer/consumer: producer threads allocate blocks of random size (8-1024 bytes),
// fill them, and hand them in batches to consumer threads, which check and free them. Every block
// is freed by a thread other than the one that allocated it.
//
// A fixed amount of work; prints only numbers that depend on nothing but the arguments.
// Usage: workload_producer_consumer [pairs=1]   (pairs of one producer and one consumer thread)
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t blocks_per_producer = 6'000'000;
constexpr std::size_t blocks_per_batch = 256;
constexpr std::size_t max_batches_in_flight = 16;
constexpr std::size_t min_size = 8;
constexpr std::size_t max_size = 1024;

struct Batch {
    std::size_t count = 0;
    void* blocks[blocks_per_batch];
};

// A bounded queue of batches between one producer and one consumer; an empty batch ends it.
class BatchQueue {
public:
    void push(std::unique_ptr<Batch> batch) {
        std::unique_lock lock(mutex_);
        not_full_.wait(lock, [&] { return batches_.size() < max_batches_in_flight; });
        batches_.push_back(std::move(batch));
        not_empty_.notify_one();
    }

    std::unique_ptr<Batch> pop() {
        std::unique_lock lock(mutex_);
        not_empty_.wait(lock, [&] { return !batches_.empty(); });
        auto batch = std::move(batches_.front());
        batches_.pop_front();
        not_full_.notify_one();
        return batch;
    }

private:
    std::mutex mutex_;
    std::condition_variable not_full_, not_empty_;
    std::deque<std::unique_ptr<Batch>> batches_;
};

void produce(BatchQueue& queue, std::uint64_t seed) {
    std::mt19937_64 random(seed);
    auto batch = std::make_unique<Batch>();
    for (std::size_t i = 0; i < blocks_per_producer; ++i) {
        const std::size_t size = min_size + random() % (max_size - min_size + 1);
        auto* block = static_cast<unsigned char*>(std::malloc(size));
        if (block == nullptr) {
            std::fputs("producer_consumer: out of memory\n", stderr);
            std::exit(1);
        }
        const auto size_tag = static_cast<std::uint16_t>(size);
        std::memcpy(block, &size_tag, sizeof size_tag);
        block[size - 1] = static_cast<unsigned char>(size);
        batch->blocks[batch->count++] = block;
        if (batch->count == blocks_per_batch) {
            queue.push(std::move(batch));
            batch = std::make_unique<Batch>();
        }
    }
    if (batch->count > 0) queue.push(std::move(batch));
    queue.push(std::make_unique<Batch>());  // the end
}

void consume(BatchQueue& queue, std::uint64_t& bytes_freed) {
    for (;;) {
        auto batch = queue.pop();
        if (batch->count == 0) return;
        for (std::size_t i = 0; i < batch->count; ++i) {
            auto* block = static_cast<unsigned char*>(batch->blocks[i]);
            std::uint16_t size;
            std::memcpy(&size, block, sizeof size);
            if (size < min_size || size > max_size || block[size - 1] != static_cast<unsigned char>(size)) {
                std::fputs("producer_consumer: corrupted block\n", stderr);
                std::exit(1);
            }
            bytes_freed += size;
            std::free(block);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int pairs = argc > 1 ? std::stoi(argv[1]) : 1;
    if (pairs < 1 || pairs > 32) {
        std::fputs("usage: workload_producer_consumer [pairs 1-32]\n", stderr);
        return 2;
    }
    std::vector<BatchQueue> queues(static_cast<std::size_t>(pairs));
    std::vector<std::uint64_t> bytes_freed(static_cast<std::size_t>(pairs), 0);
    std::vector<std::thread> threads;
    for (std::size_t pair = 0; pair < queues.size(); ++pair) {
        threads.emplace_back(produce, std::ref(queues[pair]), pair + 1);
        threads.emplace_back(consume, std::ref(queues[pair]), std::ref(bytes_freed[pair]));
    }
    for (auto& thread : threads) thread.join();
    std::uint64_t total_bytes = 0;
    for (auto bytes : bytes_freed) total_bytes += bytes;
    std::printf("producer_consumer: %d pairs, %zu blocks, %llu bytes handed over\n", pairs,
                static_cast<std::size_t>(pairs) * blocks_per_producer, static_cast<unsigned long long>(total_bytes));
}
