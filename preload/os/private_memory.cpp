#include "private_memory.h"

#include <algorithm>

#include "segment.h"

namespace leakwrap {
namespace {

constinit std::atomic<int64_t> g_private_bytes{0};

}  // namespace

// Two threads counting at once may store their loads in the other order; whoever stores last
// stores again if the count moved meanwhile, so the header does not keep a stale count.
void publish_private_bytes() noexcept {
    layout::Header* header = g_segment.header;
    if (header == nullptr) return;
    int64_t bytes = g_private_bytes.load(std::memory_order_relaxed);
    for (;;) {
        const uint64_t kib =
            std::min<uint64_t>((static_cast<uint64_t>(std::max<int64_t>(0, bytes)) + 1023) / 1024, UINT32_MAX);
        std::atomic_ref<uint32_t>(header->private_kib).store(static_cast<uint32_t>(kib), std::memory_order_relaxed);
        const int64_t now = g_private_bytes.load(std::memory_order_relaxed);
        if (now == bytes) return;
        bytes = now;
    }
}

void count_private_bytes(int64_t bytes) noexcept {
    g_private_bytes.fetch_add(bytes, std::memory_order_relaxed);
    publish_private_bytes();
}

// By bytes, not pages: the last page's rest is left out, a page a table at most.
void count_private_use(std::atomic<uint64_t>& counted, uint64_t used) noexcept {
    uint64_t seen = counted.load(std::memory_order_relaxed);
    while (used > seen)
        if (counted.compare_exchange_weak(seen, used, std::memory_order_relaxed)) {
            count_private_bytes(static_cast<int64_t>(used - seen));
            return;
        }
}

}  // namespace leakwrap
