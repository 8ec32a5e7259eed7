#include "memory_parts.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "leakwrap/segment_layout.h"

#include "report_labels.h"

namespace leakwrap {
namespace {

constexpr uint64_t kMebibyte = uint64_t{1} << 20;

// A part worth a finding: at least this much, and at least this share of RSS.
bool large_share(uint64_t part, uint64_t rss) { return part >= 16 * kMebibyte && part * 4 >= rss; }

std::string percent_of(uint64_t part, uint64_t whole) {
    return std::to_string(whole == 0 ? 0 : (part * 100 + whole / 2) / whole) + "%";
}

std::string heap_name(const MallocHeap& heap) {
    return heap.main ? std::string("the main heap") : "a thread arena's heap at " + hex_address(heap.start);
}

// What glibc's own count says would come back: whole free pages are what malloc_trim(0) returns;
// free chunks smaller than a page, between live blocks, come back only when those are freed.
std::string returnable_evidence(const AllocatorAccount& account) {
    std::string evidence = "by glibc's own count " + human_bytes(account.free) + " is free, and up to " +
                           human_bytes(account.returnable) +
                           " of it lies in whole pages, which malloc_trim(0) "
                           "would return";
    if (account.returnable * 2 < account.free)
        evidence +=
            "; the rest is in free chunks smaller than a page between live blocks, which no trim "
            "returns (fragmentation)";
    return evidence + "; ";
}

void add_free_finding(MemoryParts& parts) {
    if (parts.heap_list.empty() || !large_share(parts.free_in_heaps, parts.rss)) return;
    uint64_t thread_heaps = 0, in_thread_heaps = 0;
    for (const MallocHeap& heap : parts.heap_list) {
        if (heap.main) continue;
        ++thread_heaps;
        in_thread_heaps += heap.resident;
    }
    std::string finding = "malloc keeps " + human_bytes(parts.free_in_heaps) + " free (" +
                          percent_of(parts.free_in_heaps, parts.rss) + " of RSS) in " +
                          std::to_string(parts.heap_list.size()) + " heaps, beside " +
                          human_bytes(parts.live_in_heaps) + " of live blocks; ";
    if (parts.allocator && parts.allocator->allocator == "glibc") finding += returnable_evidence(*parts.allocator);
    if (thread_heaps >= 2 && in_thread_heaps * 2 >= parts.heaps) {
        finding += std::to_string(thread_heaps) + " heaps of thread arenas hold " + human_bytes(in_thread_heaps) +
                   ". glibc gives threads arenas of their own (up to 8 a core), and an arena keeps what was "
                   "freed in it for the threads that use it: MALLOC_ARENA_MAX=2 makes threads share two "
                   "arenas and reuse each other's free memory; an allocator that returns free pages by "
                   "itself (jemalloc, tcmalloc) is the other remedy.";
    } else {
        finding += "the largest is " + heap_name(parts.heap_list.front()) + " (" +
                   human_bytes(parts.heap_list.front().resident) +
                   "). Freed memory between live blocks stays resident, since a heap shrinks only from its "
                   "top: malloc_trim(0) returns the whole free pages inside the heaps, and a lower "
                   "MALLOC_TRIM_THRESHOLD_ makes free() trim sooner.";
    }
    parts.findings.push_back(std::move(finding));
}

// jemalloc's own count gives its memory as the heaps: what is allocated (live blocks, their
// headers, and leakwrap's and the loader's own), what is free within its active pages, the dirty
// pages its decay will return, and its metadata.
void add_jemalloc_finding(MemoryParts& parts) {
    const AllocatorAccount& account = *parts.allocator;
    std::string finding = "jemalloc's own count: it keeps " + human_bytes(account.free) +
                          " free within its active pages (pages that still hold live blocks, returned only "
                          "once those are freed) and " +
                          human_bytes(account.returnable) +
                          " of dirty pages, which its decay returns to the system by itself (sooner with "
                          "MALLOC_CONF=dirty_decay_ms:…)";
    if (large_share(account.free + account.returnable, parts.rss)) finding += ": that is where the RSS is";
    parts.findings.push_back(finding + ".");
}

void add_findings(MemoryParts& parts) {
    if (parts.allocator && parts.allocator->allocator == "jemalloc")
        add_jemalloc_finding(parts);
    else if (!parts.allocator_library.empty())
        parts.findings.push_back("the allocator below leakwrap is " + parts.allocator_library +
                                 ", whose heaps leakwrap does not tell apart: its live blocks are counted "
                                 "within the anonymous memory, and the other anonymous memory is its free "
                                 "memory and metadata as well as memory outside malloc.");
    add_free_finding(parts);
    const uint64_t live = parts.live_in_heaps + parts.large_blocks;
    if (live >= 16 * kMebibyte && live * 2 >= parts.rss)
        parts.findings.push_back("live blocks hold " + human_bytes(live) + " (" + percent_of(live, parts.rss) +
                                 " of RSS): the call sites below say whose they are.");
    if (parts.allocator_library.empty() && large_share(parts.other_anonymous, parts.rss))
        parts.findings.push_back(human_bytes(parts.other_anonymous) + " (" +
                                 percent_of(parts.other_anonymous, parts.rss) +
                                 " of RSS) is anonymous memory outside malloc: a runtime's own heap (Ruby's "
                                 "object pages, say) or the program's own mmap()s. No call site holds it.");
}

// The allocator's count, if it describes the memory the mappings show now: glibc's only while
// glibc is the allocator below; read lately, or with little allocated and freed since (current(),
// within the 2% that the parts may miss RSS by); and, for glibc, since the heaps last grew (a
// heap cannot hold more resident memory than its arena got from the system), so that a process
// still growing is not told its new memory is free. Else none, and `why_not` says why.
std::optional<AllocatorAccount> comparable_count(const std::optional<AllocatorAccount>& allocator,
                                                 const MemoryParts& parts, std::string& why_not) {
    if (!allocator) return std::nullopt;
    const bool glibc = allocator->allocator == "glibc";
    if (glibc != parts.allocator_library.empty()) {
        why_not = "it is another allocator's than theirs";
    } else if (!current(*allocator, parts.rss / 50)) {
        const std::optional<uint64_t> moved = bytes_moved_since(*allocator);
        why_not = moved ? "what was allocated and freed since, " + human_bytes(*moved) +
                              " with the blocks' overhead, may have moved its figures by more than 2% of RSS"
                        : "it is older than they are, and what came since is not known";
    } else if (glibc && parts.heaps > allocator->system + allocator->system / 50) {
        why_not = "it was read before they last grew";
    } else {
        return allocator;
    }
    return std::nullopt;
}

}  // namespace

void LiveBySize::add(uint32_t size_class, uint64_t live_blocks, uint64_t live_bytes) {
    blocks += live_blocks;
    if (size_class > 0 && layout::size_class_limit(size_class - 1) >= kLargeBlock) {
        large_bytes += live_bytes;
    } else {
        small_blocks += live_blocks;
        small_bytes += live_bytes;
    }
}

LiveBySize live_by_size(const Snapshot& snapshot) {
    LiveBySize live;
    live.blocks_bare = snapshot.bins_estimated;
    for (uint32_t size_class = 0; size_class < snapshot.bins.size(); ++size_class)
        live.add(size_class, snapshot.bins[size_class].live_blocks(), snapshot.bins[size_class].live_bytes());
    return live;
}

std::vector<std::pair<const char*, uint64_t>> named_parts(const MemoryParts& parts) {
    return {{"heap_live", parts.live_in_heaps},     {"heap_block_overhead", parts.block_overhead},
            {"heap_free", parts.free_in_heaps},     {"large_blocks", parts.large_blocks},
            {"thread_stacks", parts.thread_stacks}, {"files", parts.files},
            {"leakwrap", parts.leakwrap},           {"other_anonymous", parts.other_anonymous}};
}

std::string memory_parts_summary(const MemoryParts& parts) {
    return "malloc's heaps " + human_bytes(parts.heaps) + " (live blocks " + human_bytes(parts.live_in_heaps) +
           ", their overhead " + human_bytes(parts.block_overhead) + ", free kept by malloc " +
           human_bytes(parts.free_in_heaps) + "); large blocks, mmap'd " + human_bytes(parts.large_blocks) +
           "; thread stacks " + human_bytes(parts.thread_stacks) + " (" + std::to_string(parts.thread_stack_count) +
           "); code and files " + human_bytes(parts.files) + "; leakwrap " + human_bytes(parts.leakwrap) +
           "; other anonymous " + human_bytes(parts.other_anonymous);
}

nlohmann::json memory_parts_json(const MemoryParts& parts) {
    nlohmann::json named = nlohmann::json::object();
    for (const auto& [name, bytes] : named_parts(parts)) named[name] = bytes;
    nlohmann::json heaps = nlohmann::json::array();
    for (const MallocHeap& heap : parts.heap_list)
        heaps.push_back({{"start", heap.start}, {"resident_bytes", heap.resident}, {"main", heap.main}});
    return {{"rss_bytes", parts.rss},
            {"parts", named},
            {"malloc_heaps", heaps},
            {"thread_stacks", parts.thread_stack_count},
            {"findings", parts.findings}};
}

std::optional<MemoryParts> explain_memory(const ProcessMemory& memory, const LiveBySize& live,
                                          const std::optional<AllocatorAccount>& allocator) {
    if (!memory.mappings) return std::nullopt;
    const ResidentMappings& mappings = *memory.mappings;
    MemoryParts parts;
    parts.rss = memory.rss();
    parts.heap_list = mappings.heaps;
    std::stable_sort(parts.heap_list.begin(), parts.heap_list.end(),
                     [](const MallocHeap& a, const MallocHeap& b) { return a.resident > b.resident; });
    for (const MallocHeap& heap : parts.heap_list) parts.heaps += heap.resident;

    parts.thread_stacks = mappings.thread_stacks;
    parts.thread_stack_count = mappings.thread_stack_count;
    parts.files = mappings.files;
    parts.allocator_library = mappings.allocator_library;
    parts.allocator = comparable_count(allocator, parts, parts.allocator_not_weighed);
    // leakwrap's private tables are anonymous mappings outside the heaps, and so are mmap'd blocks.
    const uint64_t leakwrap_private = std::min(memory.leakwrap_private, mappings.other_anonymous);
    const uint64_t anonymous = mappings.other_anonymous - leakwrap_private;
    parts.leakwrap = memory.segment_resident + leakwrap_private;
    if (parts.allocator_library.empty()) {
        parts.live_in_heaps = std::min(live.small_bytes, parts.heaps);
        const uint64_t per_block = live.blocks_bare ? kBlockOverheadEstimate - kHeaderBytes : kBlockOverheadEstimate;
        parts.block_overhead = std::min(live.small_blocks * per_block, parts.heaps - parts.live_in_heaps);
        parts.free_in_heaps = parts.heaps - parts.live_in_heaps - parts.block_overhead;
        parts.large_blocks = std::min(live.large_bytes, anonymous);
    } else if (parts.allocator) {
        // jemalloc's resident memory, within the anonymous mappings; the few glibc heaps (the
        // loader's blocks from before it) go to the other anonymous memory.
        parts.heap_list.clear();
        parts.heaps = std::min(parts.allocator->resident, anonymous);
        parts.live_in_heaps = std::min(live.small_bytes + live.large_bytes, parts.heaps);
        const uint64_t allocated_beyond_live =
            parts.allocator->in_use > parts.live_in_heaps ? parts.allocator->in_use - parts.live_in_heaps : 0;
        parts.block_overhead =
            std::min(allocated_beyond_live + parts.allocator->metadata, parts.heaps - parts.live_in_heaps);
        parts.free_in_heaps = parts.heaps - parts.live_in_heaps - parts.block_overhead;
    } else {
        // Every live block is in the other allocator's memory, among the anonymous mappings; the
        // few glibc heaps (the loader's blocks from before it) go to the other anonymous memory.
        parts.heap_list.clear();
        parts.heaps = 0;
        parts.live_in_heaps = std::min(live.small_bytes + live.large_bytes, anonymous);
        parts.block_overhead = std::min(live.blocks * kHeaderBytes, anonymous - parts.live_in_heaps);
    }
    // The rest of RSS: /proc/PID/status and smaps are read one after the other, so what changed
    // in between lands here, with the anonymous memory no other part claims.
    uint64_t named = 0;
    for (const auto& [name, bytes] : named_parts(parts)) named += bytes;
    parts.other_anonymous = parts.rss > named ? parts.rss - named : 0;
    add_findings(parts);
    return parts;
}

}  // namespace leakwrap
