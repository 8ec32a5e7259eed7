// Turns return addresses into function, file and line using only the module list recorded in the
// segment, so that a dead process's kept segment resolves as well as a live one. An address in
// code the compiler inlined stands for several frames: each inlined function with its own line,
// then the function the code belongs to, with the line of the outermost inlined call.
//
// glibc's own modules are the exception: by default their frames are named from the symbol table
// alone, without file, line or inlined functions (SymbolizerOptions::libc_lines).
#pragma once

#include "segment_snapshot.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leakwrap {

// Kept for every address a report resolves: the texts that many frames share (functions, files,
// modules, notes) are SharedText, 4 bytes each, where strings would copy them (a module's path)
// into every frame.
struct ResolvedFrame {
    uint64_t address = 0;                // as recorded: a return address
    std::optional<SharedText> function;  // demangled
    std::optional<SharedText> file;      // as DWARF gives it, possibly absolute
    std::optional<uint32_t> line;
    std::optional<SharedText> module;       // path, or the name of a pathless module like [vdso]
    std::optional<uint64_t> module_offset;  // address - load_bias
    SharedText note;                        // why the function is unknown, if it is
    // The function was inlined into the next frame, which holds the code at `address`; the
    // frames of one address share address, module and module_offset.
    bool inlined = false;

    // The function's name, or "??" as the tools of the trade print an unknown one.
    std::string function_or_unknown() const { return function ? function->str() : "??"; }
};

// The frames of one address, innermost first: the functions inlined there (if any), then the
// function whose code it is (never inlined). Never empty.
using AddressFrames = std::vector<ResolvedFrame>;

struct SymbolizerOptions {
    // Read the DWARF of glibc's C library and dynamic loader too: a module whose file name is
    // libc.so.6 or begins with ld-linux (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1), as the
    // loader names them. Their debug info, where installed (libc6-dbg), is compressed, and libdw
    // inflates every section of it whole on the first line looked up: megabytes of the reader's
    // memory, paid by nearly every report since nearly every stack ends in __libc_start_main.
    // Without it their frames keep the names of the full symbol table (the debug file's .symtab
    // where installed), which is read without touching the DWARF.
    bool libc_lines = false;
};

class Symbolizer {
public:
    Symbolizer(std::vector<Module> modules, SymbolizerOptions options);
    ~Symbolizer();
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;

    // module_generation is the capturing site's: it picks among modules that were mapped at the
    // same address at different times. Results are cached, the reference stays valid.
    const AddressFrames& resolve(uint64_t address, uint32_t module_generation);

private:
    struct DebugInfo;

    std::optional<std::size_t> module_at(uint64_t address, uint32_t module_generation) const;
    DebugInfo& debug_info(std::size_t module_index);
    static const char* function_at(DebugInfo& info, uint64_t address);
    AddressFrames symbolize(uint64_t address, std::size_t module_index);
    // After an address of the module at `module_index` is resolved (see its comment).
    void drop_file_pages(std::size_t module_index);

    std::vector<Module> modules_;
    SymbolizerOptions options_;
    std::vector<std::unique_ptr<DebugInfo>> debug_info_;  // per module, opened on first use
    std::map<std::pair<uint64_t, uint32_t>, AddressFrames> cache_;
    static constexpr unsigned kResolutionsPerDrop = 64;
    unsigned resolved_since_drop_ = 0;
};

// One process's symbolizer across its snapshots (watch's samples, serve's requests), so that what
// it resolved is kept. Rebuilt when the module list grew: modules are only ever appended, so
// their count tells.
class ProcessSymbolizer {
public:
    explicit ProcessSymbolizer(SymbolizerOptions options) : options_(options) {}

    Symbolizer& of(const Snapshot& snapshot);

private:
    SymbolizerOptions options_;
    std::size_t modules_ = 0;
    std::unique_ptr<Symbolizer> symbolizer_;
};

}  // namespace leakwrap
