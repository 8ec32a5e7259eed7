#include "allocator_account.h"

#include <time.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "birth_window.h"
#include "report_labels.h"

namespace leakwrap {
namespace {

int64_t boot_clock_ns() {
    timespec now{};
    clock_gettime(CLOCK_BOOTTIME, &now);
    return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

std::string arena_name(const ArenaAccount& arena) {
    return "#" + std::to_string(arena.index) + (arena.index == 0 ? " (main)" : "");
}

}  // namespace

std::optional<AllocatorAccount> allocator_account(const Snapshot& snapshot) {
    if (!snapshot.allocator_statistics) return std::nullopt;
    const layout::AllocatorStatistics& read = *snapshot.allocator_statistics;
    AllocatorAccount account;
    account.allocator = read.allocator == layout::kAllocatorGlibc ? "glibc" : "jemalloc";
    const std::optional<BirthTimes> times = BirthTimes::of(snapshot);
    account.taken_since_start_ns =
        times ? times->since_start_ns(read.taken_ns) : static_cast<int64_t>(read.taken_ns);
    if (snapshot.births && snapshot.memory)
        account.age_ns = boot_clock_ns() - static_cast<int64_t>(snapshot.births->origin_boot_ns) -
                         account.taken_since_start_ns;
    account.in_use = read.in_use_bytes;
    account.free = read.free_bytes;
    account.returnable = read.returnable_bytes;
    account.system = read.system_bytes;
    account.mmapped = read.mmapped_bytes;
    account.resident = read.resident_bytes;
    account.metadata = read.metadata_bytes;
    account.arenas_total = read.arenas_total;
    for (uint32_t i = 0; i < read.arenas; ++i)
        account.arenas.push_back({i, read.arena[i].system_bytes, read.arena[i].free_bytes,
                                  read.arena[i].returnable_bytes, read.arena[i].free_chunks});
    return account;
}

bool fresh(const AllocatorAccount& account) { return account.age_ns && *account.age_ns <= kFreshReadingNs; }

std::string allocator_account_summary(const AllocatorAccount& account) {
    const std::string when = account.age_ns ? "read " + birth_time_text(std::max<int64_t>(*account.age_ns, 0)) + " ago"
                                            : "read at " + birth_time_text(account.taken_since_start_ns) +
                                                  " since the start";
    if (account.allocator == "glibc")
        return "glibc's own count (malloc_info, " + when + "): in use " + human_bytes(account.in_use) + ", free " +
               human_bytes(account.free) + " in " + std::to_string(account.arenas_total) +
               " arenas, of which up to " + human_bytes(account.returnable) +
               " in whole pages (what malloc_trim(0) would return); blocks mmap'd " + human_bytes(account.mmapped);
    return "jemalloc's own count (mallctl stats, " + when + "): allocated " + human_bytes(account.in_use) +
           ", free in its active pages " + human_bytes(account.free) + ", dirty pages " +
           human_bytes(account.returnable) + " (its decay returns them), metadata " + human_bytes(account.metadata) +
           ", resident " + human_bytes(account.resident) + ", in " + std::to_string(account.arenas_total) +
           " arenas";
}

std::string arenas_summary(const AllocatorAccount& account, std::size_t shown) {
    // The most free first, ties in the allocator's order; then shown in the allocator's order.
    std::vector<ArenaAccount> most_free = account.arenas;
    std::stable_sort(most_free.begin(), most_free.end(),
                     [](const ArenaAccount& a, const ArenaAccount& b) { return a.free > b.free; });
    if (most_free.size() > shown) most_free.resize(shown);
    std::sort(most_free.begin(), most_free.end(),
              [](const ArenaAccount& a, const ArenaAccount& b) { return a.index < b.index; });
    std::string text;
    for (const ArenaAccount& arena : most_free)
        text += (text.empty() ? "" : "; ") + arena_name(arena) + " " + human_bytes(arena.free) + " free, " +
                human_bytes(arena.returnable) + " in whole pages, of " + human_bytes(arena.system);
    const std::size_t more = account.arenas_total - most_free.size();
    if (!text.empty() && more > 0) text += "; and " + std::to_string(more) + " more";
    return text;
}

nlohmann::json allocator_account_json(const AllocatorAccount& account) {
    nlohmann::json arenas = nlohmann::json::array();
    for (const ArenaAccount& arena : account.arenas)
        arenas.push_back({{"arena", arena.index},
                          {"system_bytes", arena.system},
                          {"free_bytes", arena.free},
                          {"returnable_bytes", arena.returnable},
                          {"free_chunks", arena.free_chunks}});
    return {{"allocator", account.allocator},
            {"taken_since_start_seconds", double(account.taken_since_start_ns) / 1e9},
            {"age_seconds", account.age_ns ? nlohmann::json(double(*account.age_ns) / 1e9) : nlohmann::json()},
            {"in_use_bytes", account.in_use},
            {"free_bytes", account.free},
            {"returnable_bytes", account.returnable},
            {"system_bytes", account.system},
            {"mmapped_bytes", account.mmapped},
            {"resident_bytes", account.resident},
            {"metadata_bytes", account.metadata},
            {"arenas_total", account.arenas_total},
            {"arenas", arenas}};
}

}  // namespace leakwrap
