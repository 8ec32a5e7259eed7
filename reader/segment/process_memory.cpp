#include "process_memory.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace leakwrap {
namespace {

constexpr uint64_t kKibibyte = 1024;

std::string proc_file(pid_t pid, const char* name) {
    return "/proc/" + std::to_string(pid) + "/" + name;
}

// "RssAnon:	   12345 kB" → bytes; the field must be `name` exactly.
std::optional<uint64_t> kilobyte_field(const std::string& line, std::string_view name) {
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':')
        return std::nullopt;
    std::istringstream value(line.substr(name.size() + 1));
    uint64_t kilobytes = 0;
    if (!(value >> kilobytes)) return std::nullopt;
    return kilobytes * kKibibyte;
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
        for (auto [name, field] : {std::pair{"RssAnon", &memory.rss_anon},
                                   std::pair{"RssFile", &memory.rss_file},
                                   std::pair{"RssShmem", &memory.rss_shmem}}) {
            if (const auto bytes = kilobyte_field(line, name)) {
                *field = *bytes;
                ++found;
            }
        }
    }
    // A process that exited between the two reads has no memory fields (a zombie) or no file.
    if (found != 3) return std::nullopt;

    // smaps: a header line per mapping (address range … path), then its "Name: value kB" fields,
    // among them its Rss and Pss.
    std::ifstream smaps(proc_file(pid, "smaps"));
    bool in_segment = false;
    const std::string segment_path = segment.string();
    for (std::string line; std::getline(smaps, line);) {
        const std::size_t first_space = line.find(' ');
        if (first_space != std::string::npos && line[first_space - 1] != ':') {
            const std::size_t path = line.find('/');
            in_segment = path != std::string::npos &&
                         line.compare(path, std::string::npos, segment_path) == 0;
            continue;
        }
        if (const auto bytes = kilobyte_field(line, "Pss")) memory.pss += *bytes;
        if (in_segment)
            if (const auto bytes = kilobyte_field(line, "Rss")) memory.segment_resident += *bytes;
    }
    return memory;
}

nlohmann::json process_memory_json(const std::optional<ProcessMemory>& memory) {
    if (!memory) return nullptr;
    return {{"rss_bytes", memory->rss()},
            {"rss_anon_bytes", memory->rss_anon},
            {"rss_file_bytes", memory->rss_file},
            {"rss_shmem_bytes", memory->rss_shmem},
            {"leakwrap_segment_resident_bytes", memory->segment_resident},
            {"leakwrap_private_bytes", memory->leakwrap_private},
            {"pss_bytes", memory->pss}};
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
    };
}

}  // namespace leakwrap
