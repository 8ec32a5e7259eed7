#include "symbolizer.h"

#include <leakwrap/segment_layout.h>

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace leakwrap {
namespace {

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

// "_ZN3fooEv" -> "foo()", "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main": the symbol
// version says which ABI was linked, not which code ran, and would split one function in two.
std::string readable_function_name(const char* symbol) {
    const std::string name(symbol, std::strcspn(symbol, "@"));
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> demangled(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
    return status == 0 && demangled ? std::string(demangled.get()) : name;
}

// Pseudo-modules such as [vdso] have no file to read symbols from.
bool has_file(const Module& module) { return module.path.starts_with('/'); }

std::string display_name(const Module& module) {
    return module.path.empty() ? std::string("[anonymous]") : module.path;
}

// The recorded id keeps at most kBuildIdMax leading bytes of the file's.
bool same_build_id(const std::vector<uint8_t>& recorded, const unsigned char* bits, int length) {
    if (length <= 0) return false;
    const auto kept = std::min<std::size_t>(static_cast<std::size_t>(length), layout::kBuildIdMax);
    return recorded.size() == kept && std::memcmp(recorded.data(), bits, kept) == 0;
}

}  // namespace

// A module's function symbols sorted by address. elfutils' dwfl_module_addrinfo scans the whole
// symbol table on every call: on cc1plus (about 100,000 symbols) that was 2 s for 1000 rows.
class FunctionIndex {
public:
    explicit FunctionIndex(Dwfl_Module* module) {
        const int count = dwfl_module_getsymtab(module);
        for (int i = 1; i < count; ++i) {
            GElf_Sym symbol{};
            GElf_Addr address = 0;
            const char* name =
                dwfl_module_getsym_info(module, i, &symbol, &address, nullptr, nullptr, nullptr);
            const int type = GELF_ST_TYPE(symbol.st_info);
            if (name == nullptr || *name == '\0' || address == 0 ||
                (type != STT_FUNC && type != STT_GNU_IFUNC))
                continue;
            functions_.push_back({address, symbol.st_size, binding_rank(symbol), name});
        }
        // At one address, the preferred name (global, then weak, then local) comes first.
        std::sort(functions_.begin(), functions_.end(), [](const Function& a, const Function& b) {
            return a.start != b.start ? a.start < b.start : a.rank < b.rank;
        });
    }

    bool usable() const { return !functions_.empty(); }

    // The function whose extent holds `address`; a zero-sized symbol extends to the next one.
    const char* name_at(uint64_t address) const {
        auto after = std::upper_bound(functions_.begin(), functions_.end(), address,
                                      [](uint64_t wanted, const Function& f) { return wanted < f.start; });
        if (after == functions_.begin()) return nullptr;
        auto at = std::prev(after);
        while (at != functions_.begin() && std::prev(at)->start == at->start) --at;
        const uint64_t end = at->size != 0 ? at->start + at->size
                             : after != functions_.end() ? after->start
                                                         : at->start + 1;
        return address < end ? at->name : nullptr;
    }

private:
    struct Function {
        uint64_t start;
        uint64_t size;
        int rank;
        const char* name;  // in the module's string table, alive as long as the Dwfl
    };

    static int binding_rank(const GElf_Sym& symbol) {
        switch (GELF_ST_BIND(symbol.st_info)) {
            case STB_GLOBAL: return 0;
            case STB_WEAK: return 1;
            default: return 2;
        }
    }

    std::vector<Function> functions_;
};

struct Symbolizer::DebugInfo {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* module = nullptr;  // null when unusable, with the reason in `problem`
    std::string problem;
    std::optional<FunctionIndex> functions;  // built on the first lookup

    ~DebugInfo() {
        if (dwfl != nullptr) dwfl_end(dwfl);
    }
};

Symbolizer::Symbolizer(std::vector<Module> modules)
    : modules_(std::move(modules)), debug_info_(modules_.size()) {}

Symbolizer::~Symbolizer() = default;

std::optional<std::size_t> Symbolizer::module_at(uint64_t address,
                                                 uint32_t module_generation) const {
    // Several candidates mean a record was not marked unloaded in time: the latest load wins.
    const auto later = [&](std::optional<std::size_t> best, std::size_t candidate) {
        return !best || modules_[candidate].load_generation > modules_[*best].load_generation;
    };
    std::optional<std::size_t> mapped_then;
    std::optional<std::size_t> in_range_only;
    for (std::size_t i = 0; i < modules_.size(); ++i) {
        const Module& module = modules_[i];
        if (address < module.start || address >= module.end) continue;
        if (later(in_range_only, i)) in_range_only = i;
        const bool was_mapped = module.load_generation <= module_generation &&
                                module_generation < module.unload_generation;
        if (was_mapped && later(mapped_then, i)) mapped_then = i;
    }
    // The writer may record a generation older than its module scan (it never waits for a scan
    // in progress), so the address alone has the last word.
    return mapped_then ? mapped_then : in_range_only;
}

Symbolizer::DebugInfo& Symbolizer::debug_info(std::size_t module_index) {
    auto& slot = debug_info_[module_index];
    if (slot) return *slot;
    slot = std::make_unique<DebugInfo>();
    const Module& module = modules_[module_index];

    slot->dwfl = dwfl_begin(&kOfflineCallbacks);
    if (slot->dwfl == nullptr) {
        slot->problem = std::string("libdw: ") + dwfl_errmsg(-1);
        return *slot;
    }
    dwfl_report_begin(slot->dwfl);
    const std::string name = std::filesystem::path(module.path).filename().string();
    Dwfl_Module* reported =
        dwfl_report_elf(slot->dwfl, name.c_str(), module.path.c_str(), -1, module.load_bias, false);
    dwfl_report_end(slot->dwfl, nullptr, nullptr);
    if (reported == nullptr) {
        slot->problem = std::string("cannot read ") + module.path + ": " + dwfl_errmsg(-1);
        return *slot;
    }
    if (!module.build_id.empty()) {
        const unsigned char* bits = nullptr;
        GElf_Addr build_id_address = 0;
        const int length = dwfl_module_build_id(reported, &bits, &build_id_address);
        if (!same_build_id(module.build_id, bits, length)) {
            slot->problem = "build-id mismatch: " + module.path + " has changed since the run";
            return *slot;
        }
    }
    slot->module = reported;
    return *slot;
}

// Through the sorted index; modules without a symbol table of functions go to elfutils, which
// may still find names (e.g. in .gnu_debugdata or a separate debug file).
const char* Symbolizer::function_at(DebugInfo& info, uint64_t address) {
    if (!info.functions) info.functions.emplace(info.module);
    if (info.functions->usable()) return info.functions->name_at(address);
    GElf_Off symbol_offset = 0;
    GElf_Sym symbol{};
    return dwfl_module_addrinfo(info.module, address, &symbol_offset, &symbol, nullptr, nullptr,
                                nullptr);
}

ResolvedFrame Symbolizer::symbolize(uint64_t address, std::size_t module_index) {
    const Module& module = modules_[module_index];
    ResolvedFrame frame;
    frame.address = address;
    frame.module = display_name(module);
    frame.module_offset = address - module.load_bias;
    if (!has_file(module)) return frame;

    DebugInfo& info = debug_info(module_index);
    if (info.module == nullptr) {
        frame.note = info.problem;
        return frame;
    }
    // A return address points after the call; one byte back is inside the call instruction,
    // which is what belongs to the calling line (and function, for a call at a function's end).
    const uint64_t call_address = address - 1;
    if (const char* name = function_at(info, call_address)) frame.function = readable_function_name(name);
    if (Dwfl_Line* line = dwfl_module_getsrc(info.module, call_address)) {
        Dwarf_Addr line_address = 0;
        int line_number = 0;
        if (const char* file =
                dwfl_lineinfo(line, &line_address, &line_number, nullptr, nullptr, nullptr)) {
            frame.file = file;
            if (line_number > 0) frame.line = static_cast<uint32_t>(line_number);
        }
    }
    return frame;
}

const ResolvedFrame& Symbolizer::resolve(uint64_t address, uint32_t module_generation) {
    const auto key = std::make_pair(address, module_generation);
    if (const auto cached = cache_.find(key); cached != cache_.end()) return cached->second;

    ResolvedFrame frame;
    frame.address = address;
    // address - 1 for the same reason as in symbolize(): a call ending a module still belongs to
    // it.
    if (const auto module_index =
            address == 0 ? std::nullopt : module_at(address - 1, module_generation))
        frame = symbolize(address, *module_index);
    else
        frame.note = "no recorded module maps this address";
    return cache_.emplace(key, std::move(frame)).first->second;
}

}  // namespace leakwrap
