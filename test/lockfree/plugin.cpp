// A module the lock-free test loads and unloads while other threads record: its call site's
// stack starts in a module the segment did not know, so recording it rescans the module list.
#include <cstdint>

extern "C" __attribute__((visibility("default"), noinline)) uint32_t lockfree_plugin_allocate(
    uint32_t (*record_allocation)(uint64_t), uint64_t size) {
    uint32_t site = record_allocation(size);
    asm volatile("" : "+r"(site));  // keeps the call a call (no tail call): this frame is the site
    return site;
}
