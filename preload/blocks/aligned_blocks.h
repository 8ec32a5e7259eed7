// Blocks aligned to a page or more, tracked without a header. A header before such a block would
// sit alone in the page before it, a page the program never touches: a page of RSS per block
// (O_DIRECT buffers, page-aligned C++ objects, valloc). Instead the block is the real
// allocator's own, and this table keeps its size and site by address.
//
// A lock-free open-addressing table of a fixed 65,536 entries of 16 bytes (1 MiB reserved at the
// first such block, its pages counted as they are written; entries are placed by the block's
// page, so neighbouring blocks share pages of it): claimed by compare-and-swap of the address,
// freed by a tombstone, so that a signal handler or another thread may free any block at any
// time. A key always lies before the first empty entry of its probe sequence (entries never
// become empty again), so a look-up for an address never recorded ends there. A block that
// finds no room (more than three quarters of the table live, or no free entry within 64 probes)
// takes a header after all.
//
// Such a block is told apart at free() by its page-aligned address and a look-up here: the word
// before it is the real allocator's, never a leakwrap tag (block_header.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace leakwrap {

// Alignments from this one up are tracked here.
inline constexpr std::size_t kHeaderlessAlignment = 4096;
// Sizes up to this one fit an entry (2^37 bytes: 128 GiB).
inline constexpr uint64_t kMaxHeaderlessSize = (uint64_t{1} << 37) - 1;

inline bool may_be_headerless(const void* block) {
    return (reinterpret_cast<uintptr_t>(block) & (kHeaderlessAlignment - 1)) == 0;
}

// Records a block handed out at `block` with its requested size and site (kUnsampledSite
// included); false if there is no room: the caller gives the block a header instead.
bool remember_headerless_block(void* block, uint64_t size, uint32_t site);

// If `block` was recorded: its size and site, and with `forget` its entry is freed.
bool find_headerless_block(void* block, bool forget, uint64_t* size, uint32_t* site);

}  // namespace leakwrap
