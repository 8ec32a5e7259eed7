#include "call_site_cache.h"

#include <pthread.h>

#include <atomic>
#include <cstddef>

#include "debug_check.h"
#include "guard.h"
#include "os.h"
#include "private_memory.h"
#include "segment.h"
#include "thread_stacks.h"

namespace leakwrap {
namespace {

constexpr uint32_t kEntries = 64;  // per thread, direct-mapped

// An entry is first only seen: its key and site are noted. Once the key has led to the same
// site kRepeatsBeforeFilling times in a row, the next stack captured with its slots fills it
// (a walk by frame sizes gives them; where the stack cannot be walked, the slow unwind). Keys
// whose stacks keep changing (an interpreter's, where the same C caller at the same depth runs
// for many scripts) then neither pay for slow unwinds nor copy a stack each time.
enum EntryState : uint32_t { kEmpty, kSeen, kFilled };
constexpr uint32_t kRepeatsBeforeFilling = 64;

struct Entry {
    uintptr_t return_address;
    uintptr_t stack_pointer;
    uint32_t size_class;
    uint32_t birth_cell;  // a new cell is a new key: its allocations count at sites of their own (R9)
    uint32_t site;
    uint32_t depth;    // kFilled: frames remembered
    uint32_t repeats;  // kSeen: times in a row the key led to `site`
    uint32_t state;
    // followed by uint64_t frames[max_depth] and uint32_t slot_offsets[max_depth]
};

}  // namespace

// Declared in thread_state.h, which holds a pointer to it.
struct ThreadCache {
    uintptr_t stack_low;
    uintptr_t stack_high;
    std::size_t entry_size;  // entry_size() when the cache was made, which its mapping is sized by
    std::size_t mapping_size;
    // followed by kEntries entries
};

namespace {

constinit pthread_key_t g_cache_key{};
constinit bool g_cache_key_ready = false;
ThreadCache* const kNoCache = reinterpret_cast<ThreadCache*>(1);

std::size_t entry_size() {
    return (sizeof(Entry) + g_segment.max_depth * (sizeof(uint64_t) + sizeof(uint32_t)) + 15) & ~std::size_t{15};
}

Entry* entry_at(ThreadCache* cache, uint32_t index) {
    return reinterpret_cast<Entry*>(reinterpret_cast<std::byte*>(cache + 1) + index * cache->entry_size);
}
uint64_t* entry_frames(Entry* entry) { return reinterpret_cast<uint64_t*>(entry + 1); }
uint32_t* entry_slot_offsets(Entry* entry) {
    return reinterpret_cast<uint32_t*>(entry_frames(entry) + g_segment.max_depth);
}

// The caches of exited threads, kept for the threads that start next, so that a program that
// starts a thread per task does not map and unmap one each time: munmap flushes the TLB of every
// CPU the process runs on, which cost more than the thread's creation (workload_thread_per_task
// measures it). Each slot holds a cache
// or null, moved by atomic exchange, so a cache has one owner at a time; lock-free, for exit
// and first allocation may run in a signal handler or just before a fork. A pooled cache stays
// counted as private memory.
constexpr uint32_t kPooledCaches = 16;
constinit std::atomic<ThreadCache*> g_pooled_caches[kPooledCaches]{};

ThreadCache* take_pooled_cache() {
    for (std::atomic<ThreadCache*>& slot : g_pooled_caches) {
        if (slot.load(std::memory_order_relaxed) == nullptr) continue;
        if (ThreadCache* cache = slot.exchange(nullptr, std::memory_order_acquire)) return cache;
    }
    return nullptr;
}

void release_cache(void* cache) {
    auto* thread_cache = static_cast<ThreadCache*>(cache);
    t_thread.call_site_cache = kNoCache;  // frees during the rest of this thread's exit just unwind
    for (std::atomic<ThreadCache*>& slot : g_pooled_caches) {
        ThreadCache* empty = nullptr;
        if (slot.compare_exchange_strong(empty, thread_cache, std::memory_order_release, std::memory_order_relaxed))
            return;
    }
    count_private_bytes(-static_cast<int64_t>(thread_cache->mapping_size));
    os::unmap(thread_cache, thread_cache->mapping_size);
}

// A pooled cache, emptied, or a new one; null if no memory.
ThreadCache* cache_memory(std::size_t entry_bytes) {
    if (ThreadCache* cache = take_pooled_cache()) {
        LEAKWRAP_CHECK(cache->entry_size == entry_bytes);
        for (uint32_t i = 0; i < kEntries; ++i) entry_at(cache, i)->state = kEmpty;
        return cache;
    }
    std::size_t size = sizeof(ThreadCache) + kEntries * entry_bytes;
    auto* cache = static_cast<ThreadCache*>(os::map_private(size));
    if (cache == nullptr) return nullptr;
    cache->entry_size = entry_bytes;
    cache->mapping_size = size;
    count_private_bytes(static_cast<int64_t>(size));
    return cache;
}

// Once per thread, out of the hot path.
__attribute__((noinline, cold)) ThreadCache* create_cache() {
    t_thread.call_site_cache = kNoCache;  // until it exists; also what stays if anything below fails
    const StackBounds bounds = t_thread.stack_bounds;
    if (!g_cache_key_ready || bounds.high == 0) return nullptr;
    GuardScope guard;  // pthread_setspecific may allocate
    ThreadCache* cache = cache_memory(entry_size());
    if (cache == nullptr) return nullptr;
    cache->stack_low = bounds.low;
    cache->stack_high = bounds.high;
    if (pthread_setspecific(g_cache_key, cache) != 0) {
        release_cache(cache);
        return nullptr;
    }
    t_thread.call_site_cache = cache;
    return cache;
}

// The calling thread's cache, if its stack is the one the cache knows.
inline __attribute__((always_inline)) ThreadCache* usable_cache(uintptr_t stack_pointer) {
    ThreadCache* cache = t_thread.call_site_cache;
    if (__builtin_expect(cache == nullptr, 0)) cache = create_cache();
    if (cache == nullptr || cache == kNoCache) return nullptr;
    if (stack_pointer < cache->stack_low || stack_pointer >= cache->stack_high) return nullptr;
    return cache;
}

// The innermost slot: the caller's return address, just below its stack pointer.
uintptr_t slot_base(const CallerContext& caller) { return caller.stack_pointer - sizeof(uint64_t); }

uint32_t slot_index(const CallerContext& caller, uint32_t size_class) {
    uint64_t mixed = (caller.return_address ^ (caller.stack_pointer << 7) ^ size_class) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint32_t>(mixed >> 58) % kEntries;
}

bool same_key(const Entry* entry, const CallerContext& caller, uint32_t size_class, uint32_t birth_cell) {
    return entry->return_address == caller.return_address && entry->stack_pointer == caller.stack_pointer &&
           entry->size_class == size_class && entry->birth_cell == birth_cell;
}

void set_key(Entry* entry, const CallerContext& caller, uint32_t size_class, uint32_t birth_cell) {
    entry->return_address = caller.return_address;
    entry->stack_pointer = caller.stack_pointer;
    entry->size_class = size_class;
    entry->birth_cell = birth_cell;
}

}  // namespace

void init_call_site_cache() { g_cache_key_ready = pthread_key_create(&g_cache_key, release_cache) == 0; }

CacheLookup look_up_site(const CallerContext& caller, uint32_t size_class, uint32_t birth_cell) {
    ThreadCache* cache = usable_cache(caller.stack_pointer);
    if (cache == nullptr) return {kNoCachedSite, false};
    Entry* entry = entry_at(cache, slot_index(caller, size_class));
    if (entry->state == kEmpty || !same_key(entry, caller, size_class, birth_cell)) return {kNoCachedSite, false};
    if (entry->state == kSeen) return {kNoCachedSite, entry->repeats >= kRepeatsBeforeFilling};
    const uint64_t* frames = entry_frames(entry);
    const uint32_t* offsets = entry_slot_offsets(entry);
    uintptr_t base = slot_base(caller);
    for (uint32_t i = 0; i < entry->depth; ++i) {
        auto* slot = reinterpret_cast<const uint64_t*>(base + offsets[i]);
        if (*slot != frames[i]) {
            entry->state = kSeen;  // the stack above changed: start counting again
            entry->repeats = 0;
            return {kNoCachedSite, false};
        }
    }
    return {entry->site, false};
}

void remember_site(const CallerContext& caller, uint32_t size_class, uint32_t birth_cell, const CapturedStack& stack,
                   uint32_t site) {
    ThreadCache* cache = usable_cache(caller.stack_pointer);
    if (cache == nullptr) return;
    Entry* entry = entry_at(cache, slot_index(caller, size_class));
    const bool seen_here = entry->state == kSeen && same_key(entry, caller, size_class, birth_cell);
    if (!stack.slots_known || !seen_here || entry->repeats < kRepeatsBeforeFilling) {
        bool repeated = seen_here && entry->site == site;
        entry->state = kSeen;
        set_key(entry, caller, size_class, birth_cell);
        entry->site = site;
        entry->repeats = repeated ? entry->repeats + 1 : 1;
        return;
    }
    uintptr_t base = slot_base(caller);
    for (uint32_t i = 0; i < stack.depth; ++i) {
        uintptr_t slot = stack.slots[i];
        if (slot < base || slot + sizeof(uint64_t) > cache->stack_high || slot - base > UINT32_MAX) {
            entry->repeats = 0;  // not worth capturing the slots again at the next call
            return;
        }
    }
    entry->state = kEmpty;
    set_key(entry, caller, size_class, birth_cell);
    entry->site = site;
    entry->depth = stack.depth;
    uint64_t* frames = entry_frames(entry);
    uint32_t* offsets = entry_slot_offsets(entry);
    for (uint32_t i = 0; i < stack.depth; ++i) {
        frames[i] = stack.frames[i];
        offsets[i] = static_cast<uint32_t>(stack.slots[i] - base);
    }
    entry->state = kFilled;
}

}  // namespace leakwrap
