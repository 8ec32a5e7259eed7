#include "symbolizer.h"

#include "mapped_file_pages.h"

#include <leakwrap/segment_layout.h>

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace leakwrap {
namespace {

// "_ZN3fooEv" -> "foo()", "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main": the symbol
// version says which ABI was linked, not which code ran, and would split one function in two.
std::string readable_function_name(const char* symbol) {
    const std::string name(symbol, std::strcspn(symbol, "@"));
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                          &std::free);
    return status == 0 && demangled ? std::string(demangled.get()) : name;
}

// Pseudo-modules such as [vdso] have no file to read symbols from.
bool has_file(const Module& module) { return module.path.starts_with('/'); }

// SymbolizerOptions::libc_lines says which modules and why. By the name the loader gave the
// module: the one DT_NEEDED asked for (libc.so.6, also where that is a link to libc-2.31.so) or,
// for the loader, the executable's PT_INTERP.
bool is_glibc(const Module& module) {
    const std::string name = std::filesystem::path(module.path).filename().string();
    return name == "libc.so.6" || name.starts_with("ld-linux");
}

std::string display_name(const Module& module) {
    return module.path.empty() ? std::string("[anonymous]") : module.path;
}

// A module's path comes from the segment, and since the run anyone who can write its directory
// may have put a FIFO there, in place of the module or of a debug file beside it: its open()
// would wait forever for a writer. So files there are opened without waiting and read only if
// regular. Links are followed: libraries are usually reached through one (libc.so.6).
// Returns -1 with the reason in `problem`.
int open_regular_file(const std::string& path, std::string& problem) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        problem = "cannot read " + path + ": " + std::strerror(errno);
        return -1;
    }
    struct stat status {};
    if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
        problem = "cannot read " + path + ": not a regular file";
        ::close(fd);
        return -1;
    }
    return fd;
}

// A separate debug file in the module's directory or its .debug, where elfutils would look too.
// It must carry the module's build-id: a module without one has nothing to tell its debug file
// by (elfutils would check a CRC of the whole file instead) and goes without.
int open_debug_file_beside(Dwfl_Module* module, const std::filesystem::path& module_path, const std::string& name,
                           char** found) {
    const unsigned char* module_id = nullptr;
    GElf_Addr id_address = 0;
    const int module_id_length = dwfl_module_build_id(module, &module_id, &id_address);
    if (module_id_length <= 0 || name.empty()) return -1;
    const std::filesystem::path directory = module_path.parent_path();
    for (const std::filesystem::path& candidate : {directory / name, directory / ".debug" / name}) {
        std::string unused_problem;
        const int fd = open_regular_file(candidate, unused_problem);
        if (fd < 0) continue;
        Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
        const void* id = nullptr;
        const ssize_t length = elf == nullptr ? -1 : dwelf_elf_gnu_build_id(elf, &id);
        const bool same = length == module_id_length && std::memcmp(id, module_id, length) == 0;
        elf_end(elf);
        if (same) {
            *found = strdup(candidate.c_str());
            return fd;
        }
        ::close(fd);
    }
    return -1;
}

// elfutils opens its candidates for separate debug info with a blocking open(), in the module's
// directory too. So the module's directory is searched here, safely, and elfutils only searches
// the system's debug directory, which only root can write (by build-id, then by name), and last
// debuginfod, which it asks only when DEBUGINFOD_URLS is set.
char g_system_debug_directory[] = "/usr/lib/debug";
char* g_debuginfo_path = g_system_debug_directory;

// To ask debuginfod, elfutils loads its client library whether or not a server is named: with
// libcurl and the TLS, SSH and Kerberos libraries below it, megabytes of the reader's resident
// memory as soon as one module has no debug info installed. Without a server the system's debug
// directory is searched without elfutils' last step.
bool debuginfod_configured() {
    const char* urls = std::getenv("DEBUGINFOD_URLS");
    return urls != nullptr && std::string_view(urls).find_first_not_of(" \t\n") != std::string_view::npos;
}

int find_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                   const char* file_name, const char* debuglink, GElf_Word debuglink_crc, char** debuginfo_file_name) {
    // A debuglink names a file: a crafted one with directories in it ("../../tmp/fifo") would
    // lead out of the debug directories.
    const std::string link =
        debuglink == nullptr ? std::string() : std::filesystem::path(debuglink).filename().string();
    // Beside the module first: a debug file there is as good as one in /usr/lib/debug (both must
    // carry the module's build-id), and better than a download.
    if (file_name != nullptr) {
        const std::filesystem::path module_path(file_name);
        const int fd = open_debug_file_beside(module, module_path,
                                              debuglink == nullptr ? module_path.filename().string() + ".debug" : link,
                                              debuginfo_file_name);
        if (fd >= 0) return fd;
    }
    const char* named_link = debuglink == nullptr ? nullptr : link.c_str();
    if (debuginfod_configured())
        return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name, named_link, debuglink_crc,
                                            debuginfo_file_name);
    // By build-id (and a dwz file by its own), then by name under the module's path, as elfutils
    // would; a file found by name must carry the module's build-id here too.
    const int fd = dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name, named_link,
                                                debuglink_crc, debuginfo_file_name);
    if (fd >= 0 || file_name == nullptr || debuglink == nullptr) return fd;
    return open_debug_file_beside(module, std::filesystem::path(g_system_debug_directory + std::string(file_name)),
                                  link, debuginfo_file_name);
}

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

// The recorded id keeps at most kBuildIdMax leading bytes of the file's.
bool same_build_id(const std::vector<uint8_t>& recorded, const unsigned char* bits, int length) {
    if (length <= 0) return false;
    const auto kept = std::min<std::size_t>(static_cast<std::size_t>(length), layout::kBuildIdMax);
    return recorded.size() == kept && std::memcmp(recorded.data(), bits, kept) == 0;
}

// A function DIE's name, from an inlined instance through its abstract origin and from a
// definition through its declaration. A C++ linkage name demangled, as the symbol table would
// name the function (with its namespace and parameters); else the name in the source: C's
// linkage names are only asm labels (glibc's "__GI_" aliases).
std::optional<std::string> dwarf_function_name(Dwarf_Die* function) {
    const auto attribute_text = [function](int name) -> const char* {
        Dwarf_Attribute attribute;
        return dwarf_formstring(dwarf_attr_integrate(function, name, &attribute));
    };
    const char* linkage = attribute_text(DW_AT_linkage_name);
    if (linkage == nullptr) linkage = attribute_text(DW_AT_MIPS_linkage_name);
    if (linkage != nullptr && std::string_view(linkage).starts_with("_Z")) return readable_function_name(linkage);
    if (const char* name = attribute_text(DW_AT_name)) return std::string(name);
    if (linkage != nullptr) return std::string(linkage);
    return std::nullopt;
}

std::optional<uint32_t> call_line(Dwarf_Die* inlined) {
    Dwarf_Attribute attribute;
    Dwarf_Word line = 0;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attribute), &line) != 0 || line == 0 || line > UINT32_MAX)
        return std::nullopt;
    return static_cast<uint32_t>(line);
}

// DW_AT_call_file is an index into the file table of the unit's line program.
std::optional<std::string> call_file(Dwarf_Die* inlined) {
    Dwarf_Attribute attribute;
    Dwarf_Word index = 0;
    if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attribute), &index) != 0) return std::nullopt;
    Dwarf_Die unit;
    Dwarf_Files* files = nullptr;
    std::size_t count = 0;
    if (dwarf_diecu(inlined, &unit, nullptr, nullptr) == nullptr || dwarf_getsrcfiles(&unit, &files, &count) != 0 ||
        index >= count)
        return std::nullopt;
    const char* name = dwarf_filesrc(files, index, nullptr, nullptr);
    return name == nullptr ? std::nullopt : std::optional<std::string>(name);
}

// A function the compiler inlined where an address lies, and where it was called from: a line
// of the function it was inlined into.
struct InlinedCall {
    std::optional<std::string> function;
    std::optional<std::string> call_file;
    std::optional<uint32_t> call_line;
};

struct DwarfScopes {
    Dwarf_Die* dies = nullptr;
    int count = 0;
    ~DwarfScopes() { std::free(dies); }
};

// The functions inlined at `address` (as the Dwfl maps it), innermost first; none when the
// module has no DWARF for it.
std::vector<InlinedCall> inlined_calls(Dwfl_Module* module, uint64_t address) {
    Dwarf_Addr bias = 0;
    Dwarf_Die* unit = dwfl_module_addrdie(module, address, &bias);
    if (unit == nullptr) return {};
    DwarfScopes lexical;
    lexical.count = dwarf_getscopes(unit, address - bias, &lexical.dies);
    const auto is_inlined = [](Dwarf_Die& die) { return dwarf_tag(&die) == DW_TAG_inlined_subroutine; };
    if (lexical.count <= 0 || std::none_of(lexical.dies, lexical.dies + lexical.count, is_inlined)) return {};
    // Past an inlined instance, dwarf_getscopes goes on with the scopes around the inlined
    // function's own definition (for looking up names). The DIEs the innermost scope is nested
    // in lead to the callers instead: each inlined instance sits in the function it was inlined
    // into, up to the real function.
    DwarfScopes nested;
    nested.count = dwarf_getscopes_die(&lexical.dies[0], &nested.dies);
    std::vector<InlinedCall> calls;
    for (int i = 0; i < nested.count; ++i) {
        Dwarf_Die* scope = &nested.dies[i];
        const int tag = dwarf_tag(scope);
        if (tag == DW_TAG_subprogram) break;
        if (tag == DW_TAG_inlined_subroutine)
            calls.push_back({dwarf_function_name(scope), call_file(scope), call_line(scope)});
    }
    return calls;
}

}  // namespace

// A module's function symbols sorted by address. elfutils' dwfl_module_addrinfo scans the whole
// symbol table on every call, which for a large program's symbol table is slow at every row.
class FunctionIndex {
public:
    explicit FunctionIndex(Dwfl_Module* module) : module_(module) {
        dwfl_module_info(module, nullptr, &low_, nullptr, nullptr, nullptr, nullptr, nullptr);
        // Counted first, so that the index is allocated once at its size: grown by doubling,
        // libruby's and libc's held up to twice what they use, through the whole report.
        std::size_t count = 0;
        for_each_function([&](const char*, uint64_t, uint32_t, uint32_t, uint32_t) { ++count; });
        functions_.reserve(count);
        for_each_function([&](const char* name, uint64_t start, uint32_t size, uint32_t section, uint32_t rank) {
            functions_.push_back({static_cast<uint32_t>(start - low_), size, name, section, rank});
        });
        // At one address, the preferred name (global, then weak, then local) comes first.
        std::sort(functions_.begin(), functions_.end(), [](const Function& a, const Function& b) {
            return a.start != b.start ? a.start < b.start : a.rank < b.rank;
        });
    }

    bool usable() const { return !functions_.empty(); }

    // The function whose extent holds `address`; a zero-sized symbol extends to the next one in
    // its section, and covers nothing more when it is its section's last.
    const char* name_at(uint64_t address) const {
        if (address < low_ || address - low_ > UINT32_MAX) return nullptr;
        const auto offset = static_cast<uint32_t>(address - low_);
        auto after = std::upper_bound(functions_.begin(), functions_.end(), offset,
                                      [](uint32_t wanted, const Function& f) { return wanted < f.start; });
        if (after == functions_.begin()) return nullptr;
        auto at = std::prev(after);
        while (at != functions_.begin() && std::prev(at)->start == at->start) --at;
        const uint64_t end = at->size != 0 ? uint64_t{at->start} + at->size
                             : after != functions_.end() && after->section == at->section ? after->start
                                                                                          : uint64_t{at->start} + 1;
        return offset < end ? at->name : nullptr;
    }

private:
    // 20 bytes: libc's symbol table alone has 30,000 functions. (Named by their index in the
    // symbol table instead, 16 bytes, each name looked up would bring a page of the table back
    // into the reader's memory, and the pages the kernel maps around it.)
    struct __attribute__((packed, aligned(4))) Function {
        uint32_t start;    // from the module's lowest address: no module spans 4 GiB
        uint32_t size;     // no function is 4 GiB long
        const char* name;  // in the module's string table, alive as long as the Dwfl
        uint32_t section : 30;
        uint32_t rank : 2;
    };
    static_assert(sizeof(Function) == 20);

    // Calls visit(name, start, size, section, rank) for each symbol that names a function of the
    // module.
    template <class Visit>
    void for_each_function(const Visit& visit) const {
        const int count = dwfl_module_getsymtab(module_);
        for (int i = 1; i < count; ++i) {
            GElf_Sym symbol{};
            GElf_Addr address = 0;
            GElf_Word section = SHN_UNDEF;
            const char* name = dwfl_module_getsym_info(module_, i, &symbol, &address, &section, nullptr, nullptr);
            const int type = GELF_ST_TYPE(symbol.st_info);
            // An undefined symbol names code of another module; in a non-PIE executable its
            // value is the address of its PLT entry, which would otherwise stretch over the
            // module's stripped code up to the next symbol.
            if (name == nullptr || *name == '\0' || address == 0 || section == SHN_UNDEF ||
                (type != STT_FUNC && type != STT_GNU_IFUNC) || address < low_ || address - low_ > UINT32_MAX)
                continue;
            visit(name, address, static_cast<uint32_t>(std::min<uint64_t>(symbol.st_size, UINT32_MAX)), section,
                  binding_rank(symbol));
        }
    }

    static uint32_t binding_rank(const GElf_Sym& symbol) {
        switch (GELF_ST_BIND(symbol.st_info)) {
            case STB_GLOBAL: return 0;
            case STB_WEAK: return 1;
            default: return 2;
        }
    }

    Dwfl_Module* module_;
    Dwarf_Addr low_ = 0;
    std::vector<Function> functions_;
};

struct Symbolizer::DebugInfo {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* module = nullptr;  // null when unusable, with the reason in `problem`
    std::string problem;
    std::optional<FunctionIndex> functions;  // built on the first lookup
    // The files libdw mapped for the module, listed once its first address is resolved.
    std::vector<std::string> files;
    bool files_listed = false;

    ~DebugInfo() {
        if (dwfl != nullptr) dwfl_end(dwfl);
    }
};

Symbolizer::Symbolizer(std::vector<Module> modules, SymbolizerOptions options)
    : modules_(std::move(modules)), options_(options), debug_info_(modules_.size()) {}

Symbolizer::~Symbolizer() = default;

std::optional<std::size_t> Symbolizer::module_at(uint64_t address, uint32_t module_generation) const {
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
        const bool was_mapped =
            module.load_generation <= module_generation && module_generation < module.unload_generation;
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
    const int fd = open_regular_file(module.path, slot->problem);
    if (fd < 0) return *slot;
    dwfl_report_begin(slot->dwfl);
    const std::string name = std::filesystem::path(module.path).filename().string();
    // On success the module owns fd; on failure it is still ours.
    Dwfl_Module* reported = dwfl_report_elf(slot->dwfl, name.c_str(), module.path.c_str(), fd, module.load_bias, false);
    dwfl_report_end(slot->dwfl, nullptr, nullptr);
    if (reported == nullptr) {
        slot->problem = std::string("cannot read ") + module.path + ": " + dwfl_errmsg(-1);
        ::close(fd);
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
    return dwfl_module_addrinfo(info.module, address, &symbol_offset, &symbol, nullptr, nullptr, nullptr);
}

AddressFrames Symbolizer::symbolize(uint64_t address, std::size_t module_index) {
    const Module& module = modules_[module_index];
    ResolvedFrame frame;
    frame.address = address;
    frame.module = display_name(module);
    frame.module_offset = address - module.load_bias;
    if (!has_file(module)) return {frame};

    DebugInfo& info = debug_info(module_index);
    if (info.module == nullptr) {
        frame.note = info.problem;
        return {frame};
    }
    // A return address points after the call; one byte back is inside the call instruction,
    // which is what belongs to the calling line (and function, for a call at a function's end).
    const uint64_t call_address = address - 1;
    if (const char* name = function_at(info, call_address)) frame.function = readable_function_name(name);
    if (!options_.libc_lines && is_glibc(module)) return {frame};
    if (Dwfl_Line* line = dwfl_module_getsrc(info.module, call_address)) {
        Dwarf_Addr line_address = 0;
        int line_number = 0;
        if (const char* file = dwfl_lineinfo(line, &line_address, &line_number, nullptr, nullptr, nullptr)) {
            frame.file = file;
            if (line_number > 0) frame.line = static_cast<uint32_t>(line_number);
        }
    }
    // The line table's line is the innermost inlined function's; each function further out is
    // at the line that called the one inside it.
    AddressFrames frames;
    for (InlinedCall& call : inlined_calls(info.module, call_address)) {
        ResolvedFrame inlined = frame;
        inlined.function = std::move(call.function);
        inlined.inlined = true;
        frames.push_back(std::move(inlined));
        frame.file = std::move(call.call_file);
        frame.line = call.call_line;
    }
    frames.push_back(std::move(frame));
    return frames;
}

// Once a module's first address is resolved, its symbol table is indexed and libdw has looked
// for its DWARF (which it keeps, found or not): of the files it mapped for that (the module, its
// debug file), later addresses read a function's name, a page each, or the DWARF of a module
// that has it. Left resident through the report, those pages add up, the kernel mapping the pages
// around each fault with it, and those read for later addresses come back as fast as the first
// address's are dropped. So the pages of every module opened are dropped after each module's
// first address and after every kResolutionsPerDrop addresses, for a reading of /proc/self/maps
// and of the modules' page map each time.
void Symbolizer::drop_file_pages(std::size_t opened_module) {
    DebugInfo* opened = debug_info_[opened_module].get();
    const bool first_address = opened != nullptr && opened->module != nullptr && !opened->files_listed;
    if (first_address) {
        opened->files_listed = true;
        const char* main_file = nullptr;
        const char* debug_file = nullptr;
        dwfl_module_info(opened->module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, &debug_file);
        for (const char* file : {main_file, debug_file})
            if (file != nullptr) opened->files.emplace_back(file);
    }
    if (!first_address && ++resolved_since_drop_ < kResolutionsPerDrop) return;
    resolved_since_drop_ = 0;
    std::vector<std::string> files;
    for (const auto& info : debug_info_)
        if (info != nullptr) files.insert(files.end(), info->files.begin(), info->files.end());
    drop_whole_file_mappings(files);
}

const AddressFrames& Symbolizer::resolve(uint64_t address, uint32_t module_generation) {
    const auto key = std::make_pair(address, module_generation);
    if (const auto cached = cache_.find(key); cached != cache_.end()) return cached->second;

    AddressFrames frames;
    // address - 1 for the same reason as in symbolize(): a call ending a module still belongs to
    // it.
    if (const auto module_index = address == 0 ? std::nullopt : module_at(address - 1, module_generation)) {
        frames = symbolize(address, *module_index);
        drop_file_pages(*module_index);
    } else {
        ResolvedFrame frame;
        frame.address = address;
        frame.note = "no recorded module maps this address";
        frames.push_back(std::move(frame));
    }
    return cache_.emplace(key, std::move(frames)).first->second;
}

Symbolizer& ProcessSymbolizer::of(const Snapshot& snapshot) {
    if (!symbolizer_ || snapshot.modules.size() != modules_) {
        symbolizer_ = std::make_unique<Symbolizer>(snapshot.modules, options_);
        modules_ = snapshot.modules.size();
    }
    return *symbolizer_;
}

}  // namespace leakwrap
