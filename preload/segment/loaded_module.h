// What leakwrap reads of a loaded ELF module as dl_iterate_phdr describes it: the address range
// of its PT_LOAD segments, and its GNU build-id, found in the bytes of one of its PT_NOTE
// segments (read from memory for the module list, modules.cpp, and from the module's file, to
// tell that the file is the one mapped, unwind_tables.cpp).
#pragma once

#include <elf.h>
#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace leakwrap {

// [start, end): from the lowest runtime address of its PT_LOAD segments to one past the highest.
inline void address_range_of_loaded(const dl_phdr_info* info, uintptr_t* start, uintptr_t* end) {
    *start = UINTPTR_MAX;
    *end = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        if (begin < *start) *start = begin;
        if (begin + ph.p_memsz > *end) *end = begin + ph.p_memsz;
    }
}

// Copies up to `capacity` bytes of the build-id into `out`; returns their count, 0 if the notes
// hold none.
inline uint32_t build_id_in_notes(const unsigned char* notes, std::size_t size, uint8_t* out, uint32_t capacity) {
    const unsigned char* note = notes;
    const unsigned char* const end = notes + size;
    while (end - note >= static_cast<std::ptrdiff_t>(sizeof(ElfW(Nhdr)))) {
        ElfW(Nhdr) header;
        std::memcpy(&header, note, sizeof header);
        const unsigned char* name = note + sizeof(ElfW(Nhdr));
        const uint64_t name_bytes = (uint64_t{header.n_namesz} + 3) & ~uint64_t{3};
        const uint64_t desc_bytes = (uint64_t{header.n_descsz} + 3) & ~uint64_t{3};
        if (name_bytes + desc_bytes > static_cast<uint64_t>(end - name)) break;
        const unsigned char* desc = name + name_bytes;
        if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
            const uint32_t length = header.n_descsz < capacity ? header.n_descsz : capacity;
            std::memcpy(out, desc, length);
            return length;
        }
        note = desc + desc_bytes;
    }
    return 0;
}

// The build-id of a loaded module, from its notes in memory.
inline uint32_t build_id_of_loaded(const dl_phdr_info* info, uint8_t* out, uint32_t capacity) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_NOTE) continue;
        const auto* notes = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
        if (uint32_t length = build_id_in_notes(notes, ph.p_memsz, out, capacity)) return length;
    }
    return 0;
}

}  // namespace leakwrap
