#include "allocator_account.h"

#include <time.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "birth_window.h"
#include "report_labels.h"

namespace leakwrap {
namespace {

int64_t boot_clock_ns() {
    timespec now{};
    clock_gettime(CLOCK_BOOTTIME, &now);
    return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

bool read_lately(const AllocatorAccount& account) { return account.age_ns && *account.age_ns <= kFreshReadingNs; }

std::string arenas_text(uint32_t arenas) { return std::to_string(arenas) + (arenas == 1 ? " arena" : " arenas"); }

}  // namespace

std::string arena_name(uint32_t index) { return "#" + std::to_string(index) + (index == 0 ? " (main)" : ""); }

std::optional<AllocatorAccount> allocator_account(const Snapshot& snapshot) {
    if (!snapshot.allocator_statistics) return std::nullopt;
    const layout::AllocatorStatistics& read = *snapshot.allocator_statistics;
    AllocatorAccount account;
    account.allocator = read.allocator == layout::kAllocatorGlibc ? "glibc" : "jemalloc";
    const std::optional<BirthTimes> times = BirthTimes::of(snapshot);
    account.taken_since_start_ns = times ? times->since_start_ns(read.taken_ns) : static_cast<int64_t>(read.taken_ns);
    if (snapshot.births && snapshot.memory)
        account.age_ns =
            boot_clock_ns() - static_cast<int64_t>(snapshot.births->origin_boot_ns) - account.taken_since_start_ns;
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
    if (const std::optional<Counters>& counted = snapshot.counted_at_allocator_reading) {
        // The bins are copied after the statistics, so they count no less; a corrupt segment may.
        const auto since = [](uint64_t now, uint64_t then) { return now > then ? now - then : 0; };
        account.since_reading =
            Counters{since(snapshot.totals.allocs, counted->allocs), since(snapshot.totals.frees, counted->frees),
                     since(snapshot.totals.alloc_bytes, counted->alloc_bytes),
                     since(snapshot.totals.free_bytes, counted->free_bytes)};
    }
    return account;
}

std::optional<uint64_t> bytes_moved_since(const AllocatorAccount& account) {
    if (!account.since_reading) return std::nullopt;
    const Counters& since = *account.since_reading;
    return since.alloc_bytes + since.free_bytes + (since.allocs + since.frees) * kMostChunkBytesBeyondRequest;
}

bool current(const AllocatorAccount& account, uint64_t tolerance) {
    if (read_lately(account)) return true;
    const std::optional<uint64_t> moved = bytes_moved_since(account);
    return moved && *moved <= tolerance;
}

namespace {

// What was allocated and freed after the reading, when that matters: for a count older than a
// fresh one, or post mortem.
std::string activity_since(const AllocatorAccount& account) {
    if (!account.since_reading || read_lately(account)) return "";
    const Counters& since = *account.since_reading;
    if (since.allocs == 0 && since.frees == 0) return ", nothing allocated or freed since";
    return ", " + std::to_string(since.allocs) + " blocks allocated and " + std::to_string(since.frees) +
           " freed since (" + human_bytes(since.alloc_bytes) + " and " + human_bytes(since.free_bytes) + ")";
}

std::string when_read(const AllocatorAccount& account) {
    return account.age_ns ? "read " + birth_time_text(std::max<int64_t>(*account.age_ns, 0)) + " ago"
                          : "read at " + birth_time_text(account.taken_since_start_ns) + " since the start";
}

}  // namespace

std::string allocator_account_summary(const AllocatorAccount& account) {
    const std::string when = when_read(account) + activity_since(account);
    if (account.allocator == "glibc")
        return "glibc's own count (malloc_info, " + when + "): in use " + human_bytes(account.in_use) + ", free " +
               human_bytes(account.free) + " in " + arenas_text(account.arenas_total) + ", of which up to " +
               human_bytes(account.returnable) + " in whole pages (what malloc_trim(0) would return); blocks mmap'd " +
               human_bytes(account.mmapped);
    return "jemalloc's own count (mallctl stats, " + when + "): allocated " + human_bytes(account.in_use) +
           ", free in its active pages " + human_bytes(account.free) + ", dirty pages " +
           human_bytes(account.returnable) + " (its decay returns them), metadata " + human_bytes(account.metadata) +
           ", resident " + human_bytes(account.resident) + ", in " + arenas_text(account.arenas_total);
}

std::string allocator_account_brief(const AllocatorAccount& account) {
    if (account.allocator == "glibc")
        return "glibc's count, " + when_read(account) + ": free " + human_bytes(account.free) + " in " +
               arenas_text(account.arenas_total) + ", up to " + human_bytes(account.returnable) +
               " of it in whole pages; in use " + human_bytes(account.in_use);
    return "jemalloc's count, " + when_read(account) + ": free " + human_bytes(account.free) +
           " in its active pages, dirty pages " + human_bytes(account.returnable) + "; allocated " +
           human_bytes(account.in_use);
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
        text += (text.empty() ? "" : "; ") + arena_name(arena.index) + " " + human_bytes(arena.free) + " free, " +
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
    nlohmann::json since_reading;  // null when not known
    if (const std::optional<Counters>& since = account.since_reading)
        since_reading = {{"allocs", since->allocs},
                         {"frees", since->frees},
                         {"alloc_bytes", since->alloc_bytes},
                         {"free_bytes", since->free_bytes}};
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
            {"arenas", arenas},
            {"since_reading", since_reading}};
}

AllocatorAccount allocator_account_from_json(const nlohmann::json& json) {
    AllocatorAccount account;
    account.allocator = json.at("allocator").get<std::string>();
    account.taken_since_start_ns = std::llround(json.at("taken_since_start_seconds").get<double>() * 1e9);
    if (const nlohmann::json& age = json.at("age_seconds"); !age.is_null())
        account.age_ns = std::llround(age.get<double>() * 1e9);
    account.in_use = json.at("in_use_bytes").get<uint64_t>();
    account.free = json.at("free_bytes").get<uint64_t>();
    account.returnable = json.at("returnable_bytes").get<uint64_t>();
    account.system = json.at("system_bytes").get<uint64_t>();
    account.mmapped = json.at("mmapped_bytes").get<uint64_t>();
    account.resident = json.at("resident_bytes").get<uint64_t>();
    account.metadata = json.at("metadata_bytes").get<uint64_t>();
    account.arenas_total = json.at("arenas_total").get<uint32_t>();
    for (const nlohmann::json& arena : json.at("arenas"))
        account.arenas.push_back({arena.at("arena").get<uint32_t>(), arena.at("system_bytes").get<uint64_t>(),
                                  arena.at("free_bytes").get<uint64_t>(), arena.at("returnable_bytes").get<uint64_t>(),
                                  arena.at("free_chunks").get<uint64_t>()});
    // A series written before the blocks since were known has no such member.
    if (const auto since = json.find("since_reading"); since != json.end() && !since->is_null())
        account.since_reading =
            Counters{since->at("allocs").get<uint64_t>(), since->at("frees").get<uint64_t>(),
                     since->at("alloc_bytes").get<uint64_t>(), since->at("free_bytes").get<uint64_t>()};
    return account;
}

}  // namespace leakwrap
