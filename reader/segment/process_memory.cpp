#include "process_memory.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace leakwrap {
namespace {

constexpr uint64_t kKibibyte = 1024;

std::string proc_file(pid_t pid, const char* name) { return "/proc/" + std::to_string(pid) + "/" + name; }

// "RssAnon:	   12345 kB" → bytes; the field must be `name` exactly.
std::optional<uint64_t> kilobyte_field(const std::string& line, std::string_view name) {
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':') return std::nullopt;
    std::istringstream value(line.substr(name.size() + 1));
    uint64_t kilobytes = 0;
    if (!(value >> kilobytes)) return std::nullopt;
    return kilobytes * kKibibyte;
}

// glibc's HEAP_MAX_SIZE on 64-bit (2 x DEFAULT_MMAP_THRESHOLD_MAX): a thread arena's heap is
// mapped at a multiple of it.
constexpr uint64_t kThreadHeapAlignment = uint64_t{64} << 20;
// The largest guard below a thread's stack taken for one (glibc's default is a page).
constexpr uint64_t kMaxStackGuard = uint64_t{1} << 20;

struct Mapping {
    uint64_t start = 0, end = 0;
    std::string permissions, path;
    uint64_t resident = 0;
};

// "start-end perms offset dev inode   path"
std::optional<Mapping> mapping_header(const std::string& line) {
    std::istringstream fields(line);
    std::string range, offset, device, inode;
    Mapping mapping;
    if (!(fields >> range >> mapping.permissions >> offset >> device >> inode)) return std::nullopt;
    const std::size_t dash = range.find('-');
    if (dash == std::string::npos) return std::nullopt;
    try {
        mapping.start = std::stoull(range.substr(0, dash), nullptr, 16);
        mapping.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::getline(fields >> std::ws, mapping.path);
    return mapping;
}

bool anonymous(const Mapping& mapping) { return mapping.path.empty() || mapping.path.starts_with("[anon"); }

void classify(const Mapping& mapping, const Mapping* below, const std::string& segment, ProcessMemory& memory,
              ResidentMappings& mappings) {
    if (mapping.path == segment) {
        memory.segment_resident += mapping.resident;
    } else if (mapping.path == "[heap]") {
        mappings.heaps.push_back({mapping.start, mapping.resident, true});
    } else if (mapping.path == "[stack]") {
        mappings.thread_stacks += mapping.resident;
        ++mappings.thread_stack_count;
    } else if (!anonymous(mapping)) {
        mappings.files += mapping.resident;
        const std::string name = std::filesystem::path(mapping.path).filename().string();
        for (const char* allocator : {"libjemalloc", "libtcmalloc", "libmimalloc"})
            if (name.starts_with(allocator)) mappings.allocator_library = name;
    } else if (mapping.start % kThreadHeapAlignment == 0 && mapping.permissions.starts_with("rw")) {
        mappings.heaps.push_back({mapping.start, mapping.resident, false});
    } else if (below != nullptr && below->end == mapping.start && anonymous(*below) &&
               below->permissions.starts_with("---") && below->end - below->start <= kMaxStackGuard &&
               mapping.permissions.starts_with("rw")) {
        mappings.thread_stacks += mapping.resident;
        ++mappings.thread_stack_count;
    } else {
        mappings.other_anonymous += mapping.resident;
    }
}

// smaps: a header line per mapping, then its "Name: value kB" fields, among them Rss and Pss.
void read_mappings(pid_t pid, const std::string& segment, ProcessMemory& memory) {
    std::ifstream smaps(proc_file(pid, "smaps"));
    if (!smaps) return;
    ResidentMappings mappings;
    std::optional<Mapping> current, below;
    for (std::string line; std::getline(smaps, line);) {
        const std::size_t first_space = line.find(' ');
        if (first_space != std::string::npos && first_space > 0 && line[first_space - 1] != ':') {
            if (current) classify(*current, below ? &*below : nullptr, segment, memory, mappings);
            below = std::move(current);
            current = mapping_header(line);
            continue;
        }
        if (const auto bytes = kilobyte_field(line, "Pss")) memory.pss += *bytes;
        if (current)
            if (const auto bytes = kilobyte_field(line, "Rss")) current->resident += *bytes;
    }
    if (current) classify(*current, below ? &*below : nullptr, segment, memory, mappings);
    memory.mappings = std::move(mappings);
}

}  // namespace

std::optional<ProcessMemory> read_process_memory(pid_t pid, const std::filesystem::path& segment,
                                                 uint64_t leakwrap_private) {
    std::ifstream status(proc_file(pid, "status"));
    if (!status) return std::nullopt;
    ProcessMemory memory;
    memory.leakwrap_private = leakwrap_private;
    int found = 0;
    for (std::string line; std::getline(status, line);) {
        for (auto [name, field] : {std::pair{"RssAnon", &memory.rss_anon}, std::pair{"RssFile", &memory.rss_file},
                                   std::pair{"RssShmem", &memory.rss_shmem}}) {
            if (const auto bytes = kilobyte_field(line, name)) {
                *field = *bytes;
                ++found;
            }
        }
    }
    // A process that exited between the two reads has no memory fields (a zombie) or no file.
    if (found != 3) return std::nullopt;

    read_mappings(pid, segment.string(), memory);
    return memory;
}

namespace {

nlohmann::json mappings_json(const std::optional<ResidentMappings>& mappings) {
    if (!mappings) return nullptr;
    nlohmann::json heaps = nlohmann::json::array();
    for (const MallocHeap& heap : mappings->heaps)
        heaps.push_back({{"start", heap.start}, {"resident_bytes", heap.resident}, {"main", heap.main}});
    return {{"malloc_heaps", heaps},
            {"thread_stacks_bytes", mappings->thread_stacks},
            {"thread_stacks", mappings->thread_stack_count},
            {"files_bytes", mappings->files},
            {"other_anonymous_bytes", mappings->other_anonymous},
            {"allocator_library", mappings->allocator_library}};
}

std::optional<ResidentMappings> mappings_from_json(const nlohmann::json& object) {
    if (!object.is_object()) return std::nullopt;
    ResidentMappings mappings{
        .heaps = {},
        .thread_stacks = object.value("thread_stacks_bytes", uint64_t{0}),
        .thread_stack_count = object.value("thread_stacks", uint32_t{0}),
        .files = object.value("files_bytes", uint64_t{0}),
        .other_anonymous = object.value("other_anonymous_bytes", uint64_t{0}),
        .allocator_library = object.value("allocator_library", std::string()),
    };
    for (const nlohmann::json& heap : object.value("malloc_heaps", nlohmann::json::array()))
        if (heap.is_object())
            mappings.heaps.push_back({heap.value("start", uint64_t{0}), heap.value("resident_bytes", uint64_t{0}),
                                      heap.value("main", false)});
    return mappings;
}

}  // namespace

nlohmann::json process_memory_json(const std::optional<ProcessMemory>& memory) {
    if (!memory) return nullptr;
    return {{"rss_bytes", memory->rss()},
            {"rss_anon_bytes", memory->rss_anon},
            {"rss_file_bytes", memory->rss_file},
            {"rss_shmem_bytes", memory->rss_shmem},
            {"leakwrap_segment_resident_bytes", memory->segment_resident},
            {"leakwrap_private_bytes", memory->leakwrap_private},
            {"pss_bytes", memory->pss},
            {"mappings", mappings_json(memory->mappings)}};
}

std::optional<ProcessMemory> process_memory_from_json(const nlohmann::json& object) {
    if (!object.is_object()) return std::nullopt;
    return ProcessMemory{
        .rss_anon = object.value("rss_anon_bytes", uint64_t{0}),
        .rss_file = object.value("rss_file_bytes", uint64_t{0}),
        .rss_shmem = object.value("rss_shmem_bytes", uint64_t{0}),
        .segment_resident = object.value("leakwrap_segment_resident_bytes", uint64_t{0}),
        .leakwrap_private = object.value("leakwrap_private_bytes", uint64_t{0}),
        .pss = object.value("pss_bytes", uint64_t{0}),
        .mappings = mappings_from_json(object.value("mappings", nlohmann::json())),
    };
}

}  // namespace leakwrap
