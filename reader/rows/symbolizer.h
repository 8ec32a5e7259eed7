// Turns return addresses into function, file and line using only the module list recorded in the
// segment, so that a dead process's kept segment resolves as well as a live one. An address in
// code the compiler inlined stands for several frames: each inlined function with its own line,
// then the function the code belongs to, with the line of the outermost inlined call.
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

struct ResolvedFrame {
    uint64_t address = 0;                 // as recorded: a return address
    std::optional<std::string> function;  // demangled
    std::optional<std::string> file;      // as DWARF gives it, possibly absolute
    std::optional<uint32_t> line;
    std::optional<std::string> module;      // path, or the name of a pathless module like [vdso]
    std::optional<uint64_t> module_offset;  // address - load_bias
    std::string note;                       // why the function is unknown, if it is
    // The function was inlined into the next frame, which holds the code at `address`; the
    // frames of one address share address, module and module_offset.
    bool inlined = false;
};

// The frames of one address, innermost first: the functions inlined there (if any), then the
// function whose code it is (never inlined). Never empty.
using AddressFrames = std::vector<ResolvedFrame>;

class Symbolizer {
public:
    explicit Symbolizer(std::vector<Module> modules);
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

    std::vector<Module> modules_;
    std::vector<std::unique_ptr<DebugInfo>> debug_info_;  // per module, opened on first use
    std::map<std::pair<uint64_t, uint32_t>, AddressFrames> cache_;
};

// One process's symbolizer across its snapshots (watch's samples, serve's requests), so that what
// it resolved is kept. Rebuilt when the module list grew: modules are only ever appended, so
// their count tells.
class ProcessSymbolizer {
public:
    Symbolizer& of(const Snapshot& snapshot);

private:
    std::size_t modules_ = 0;
    std::unique_ptr<Symbolizer> symbolizer_;
};

}  // namespace leakwrap
