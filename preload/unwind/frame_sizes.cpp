#include "frame_sizes.h"

#include <atomic>

#include "os.h"
#include "private_memory.h"

namespace leakwrap {
namespace {

// Open addressing: each slot one word, (return address << 16) | value, so that a lookup needs
// one load and an update one compare-and-swap. User-space addresses on x86_64 lie below 2^47.
// Rails' boot learns 2,500 return addresses, ruby -e0 740, cc1plus 990: 16K slots (128 KiB,
// reserved and touched as used) leave room for a much larger app. A full table only stops the
// learning: the frames it could not learn are unwound by libunwind.
constexpr uint32_t kSlotsLog2 = 14;
constexpr uint32_t kSlots = 1u << kSlotsLog2;
constexpr uint32_t kMaxProbes = 32;  // a full neighbourhood leaves the address unknown
constexpr uintptr_t kMaxAddress = uintptr_t{1} << 47;

constinit std::atomic<uint64_t>* g_slots = nullptr;
constinit std::atomic<bool> g_full{false};

uint32_t home_slot(uintptr_t return_address) {
    return static_cast<uint32_t>((return_address * 0x9E3779B97F4A7C15ull) >> (64 - kSlotsLog2));
}

uint64_t entry(uintptr_t return_address, uint32_t value) { return (uint64_t{return_address} << 16) | value; }
uintptr_t address_of(uint64_t entry) { return static_cast<uintptr_t>(entry >> 16); }
uint32_t value_of(uint64_t entry) { return static_cast<uint32_t>(entry & 0xffff); }

// What a new observation makes of a known value: walking rules must agree.
uint32_t merged(uint32_t known, uint32_t seen) { return known == seen ? known : kUnwalkableFrame; }

}  // namespace

bool init_frame_sizes() {
    void* memory = os::reserve_private(sizeof(std::atomic<uint64_t>) * kSlots);
    g_slots = static_cast<std::atomic<uint64_t>*>(memory);
    // Filled at random: counted whole.
    if (g_slots != nullptr) count_private_bytes(int64_t{sizeof(std::atomic<uint64_t>) * kSlots});
    return g_slots != nullptr;
}

bool can_learn_frame_sizes() { return g_slots != nullptr && !g_full.load(std::memory_order_relaxed); }

// No test of the address: learn_frame_size() stores none that is 0 or from kMaxAddress on, and an
// entry's address (its top 48 bits) equals no other.
uint32_t frame_size(uintptr_t return_address) {
    std::atomic<uint64_t>* slots = g_slots;
    if (slots == nullptr) return kUnknownFrame;
    uint32_t index = home_slot(return_address);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
        uint64_t found = slots[(index + probe) & (kSlots - 1)].load(std::memory_order_relaxed);
        if (found == 0) return kUnknownFrame;
        if (address_of(found) == return_address) return value_of(found);
    }
    return kUnknownFrame;
}

void learn_frame_size(uintptr_t return_address, uint32_t seen) {
    std::atomic<uint64_t>* slots = g_slots;
    if (slots == nullptr || return_address == 0 || return_address >= kMaxAddress) return;
    if (seen > kMaxFrameSize + kMaxSavedRbpSlot || (seen > kFramePointerFrame && !is_sized_frame(seen)))
        seen = kUnwalkableFrame;
    uint32_t index = home_slot(return_address);
    for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
        std::atomic<uint64_t>& slot = slots[(index + probe) & (kSlots - 1)];
        uint64_t found = slot.load(std::memory_order_relaxed);
        for (;;) {
            if (found != 0 && address_of(found) != return_address) break;  // someone else's: next slot
            uint32_t value = found == 0 ? seen : merged(value_of(found), seen);
            if (found != 0 && value == value_of(found)) return;
            if (slot.compare_exchange_weak(found, entry(return_address, value), std::memory_order_relaxed)) return;
        }
    }
    g_full.store(true, std::memory_order_relaxed);
}

void forget_frame_sizes() {
    std::atomic<uint64_t>* slots = g_slots;
    if (slots == nullptr) return;
    for (uint32_t i = 0; i < kSlots; ++i)
        if (slots[i].load(std::memory_order_relaxed) != 0) slots[i].store(0, std::memory_order_relaxed);
    g_full.store(false, std::memory_order_relaxed);
}

}  // namespace leakwrap
