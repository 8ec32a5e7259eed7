// A thread per task, as servers that start a thread per connection or per job do: every round
// starts a few threads, each handles one small request (copies it, splits it into words, builds a
// reply from them) and ends; the round joins them and starts the next. So most of the cost is
// starting and ending threads, and each thread makes only a few dozen allocations.
//
// A fixed amount of work; prints only numbers that depend on nothing but the arguments.
// Usage: workload_thread_per_task [rounds=5000]
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr int threads_per_round = 4;
constexpr std::size_t max_words = 16;

void* checked_malloc(std::size_t size) {
    void* block = std::malloc(size);
    if (block == nullptr) {
        std::fputs("thread_per_task: out of memory\n", stderr);
        std::exit(1);
    }
    return block;
}

// The request of task `task`: a line of words whose number and lengths depend on the task.
std::string request_of(std::uint64_t task) {
    std::string request = "GET /items/" + std::to_string(task);
    for (std::uint64_t word = 0; word < 4 + task % 9; ++word)
        request += " w" + std::string(1 + (task + word) % 23, static_cast<char>('a' + (task + word) % 26));
    return request;
}

// Copies the request, splits the copy into words (one block each), builds a reply of the words in
// reverse order; returns a checksum of the reply. Frees everything it allocated.
std::uint64_t handle(const std::string& request) {
    char* copy = static_cast<char*>(checked_malloc(request.size() + 1));
    std::memcpy(copy, request.c_str(), request.size() + 1);
    char* words[max_words];
    std::size_t count = 0;
    std::size_t reply_size = 1;
    char* rest = nullptr;
    for (char* word = strtok_r(copy, " ", &rest); word != nullptr && count < max_words;
         word = strtok_r(nullptr, " ", &rest)) {
        std::size_t length = std::strlen(word);
        words[count] = static_cast<char*>(checked_malloc(length + 1));
        std::memcpy(words[count++], word, length + 1);
        reply_size += length + 1;
    }
    char* reply = static_cast<char*>(checked_malloc(reply_size));
    std::size_t at = 0;
    while (count > 0) {
        char* word = words[--count];
        std::size_t length = std::strlen(word);
        std::memcpy(reply + at, word, length);
        reply[at + length] = ',';
        at += length + 1;
        std::free(word);
    }
    std::uint64_t checksum = 1469598103934665603ull;
    for (std::size_t i = 0; i < at; ++i)
        checksum = (checksum ^ static_cast<unsigned char>(reply[i])) * 1099511628211ull;
    std::free(reply);
    std::free(copy);
    return checksum;
}

}  // namespace

int main(int argc, char** argv) {
    const long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 5000;
    if (rounds <= 0) {
        std::fputs("usage: workload_thread_per_task [rounds>0]\n", stderr);
        return 2;
    }
    std::uint64_t checksums[threads_per_round] = {};
    for (long round = 0; round < rounds; ++round) {
        std::thread threads[threads_per_round];
        for (int i = 0; i < threads_per_round; ++i) {
            const std::uint64_t task = static_cast<std::uint64_t>(round) * threads_per_round + i;
            threads[i] = std::thread([task, &checksums, i] { checksums[i] += handle(request_of(task)); });
        }
        for (std::thread& thread : threads) thread.join();
    }
    std::uint64_t total = 0;
    for (std::uint64_t checksum : checksums) total ^= checksum;
    std::printf("%ld rounds of %d threads, reply checksum %016llx\n", rounds, threads_per_round,
                static_cast<unsigned long long>(total));
    return 0;
}
