// Makes fuzzing seeds of a real segment. A segment is as large as its capacities (megabytes,
// mostly holes); its compact copy keeps only what was claimed, each table right after the
// previous one, the bin shards summed into one: the same content, parsed the same way, in a few
// kilobytes. With --with-variants, next to it go variants that break one rule each, so the
// fuzzer starts at the parser's every check instead of having to find them.
//
//   compact_segment <segment file> <output directory> <name> [--with-variants]
//
// test/fuzz/make_corpus.sh runs real programs under the preload and calls this on their segments.
#include <leakwrap/segment_layout.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <vector>

namespace {

using namespace leakwrap;
namespace fs = std::filesystem;

uint64_t align64(uint64_t offset) { return (offset + 63) / 64 * 64; }

template <class T>
T load(const std::vector<char>& bytes, uint64_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

template <class T>
void store(std::vector<char>& bytes, uint64_t offset, const T& value) {
    std::memcpy(bytes.data() + offset, &value, sizeof value);
}

std::vector<char> compact(const std::vector<char>& segment) {
    auto header = load<layout::Header>(segment, 0);
    const uint32_t sites = std::min(header.sites_claimed, header.site_capacity);
    const uint32_t modules = std::min(header.modules_claimed, header.module_capacity);
    const uint32_t strings = std::min(header.strings_used, header.strings_capacity);
    const uint64_t sites_bytes = uint64_t{sites} * header.site_record_size;
    const uint64_t modules_bytes = uint64_t{modules} * header.module_record_size;
    const uint64_t bins_bytes = uint64_t{layout::kSizeClassCount} * sizeof(layout::BinCounters);

    layout::Header compacted = header;
    compacted.site_capacity = compacted.sites_claimed = sites;
    compacted.module_capacity = compacted.modules_claimed = modules;
    compacted.strings_capacity = compacted.strings_used = strings;
    compacted.bin_shards = 1;
    compacted.sites_offset = align64(sizeof(layout::Header));
    compacted.modules_offset = align64(compacted.sites_offset + sites_bytes);
    compacted.strings_offset = align64(compacted.modules_offset + modules_bytes);
    compacted.bins_offset = align64(compacted.strings_offset + strings);
    compacted.segment_size = compacted.bins_offset + bins_bytes;

    std::vector<char> out(compacted.segment_size);
    store(out, 0, compacted);
    std::memcpy(out.data() + compacted.sites_offset, segment.data() + header.sites_offset, sites_bytes);
    std::memcpy(out.data() + compacted.modules_offset, segment.data() + header.modules_offset, modules_bytes);
    std::memcpy(out.data() + compacted.strings_offset, segment.data() + header.strings_offset, strings);
    for (uint32_t size_class = 0; size_class < layout::kSizeClassCount; ++size_class) {
        layout::BinCounters sum{};
        for (uint32_t shard = 0; shard < header.bin_shards; ++shard) {
            const auto bin = load<layout::BinCounters>(
                segment, header.bins_offset + (uint64_t{size_class} * header.bin_shards + shard) *
                                                  sizeof(layout::BinCounters));
            sum.allocs += bin.allocs;
            sum.frees += bin.frees;
            sum.alloc_bytes += bin.alloc_bytes;
            sum.free_bytes += bin.free_bytes;
        }
        store(out, compacted.bins_offset + uint64_t{size_class} * sizeof sum, sum);
    }
    return out;
}

// A compact segment with one rule broken.
struct Variant {
    const char* name;
    std::function<void(std::vector<char>&)> change;
};

void change_header(std::vector<char>& segment, const std::function<void(layout::Header&)>& change) {
    auto header = load<layout::Header>(segment, 0);
    change(header);
    store(segment, 0, header);
}

void change_last_site(std::vector<char>& segment, const std::function<void(layout::SiteRecord&)>& change) {
    const auto header = load<layout::Header>(segment, 0);
    const uint64_t at = header.sites_offset + uint64_t{header.sites_claimed - 1} * header.site_record_size;
    auto site = load<layout::SiteRecord>(segment, at);
    change(site);
    store(segment, at, site);
}

// Only rules deep inside the segment: the fuzzer finds the header's own checks by itself, and the
// corpus stays small.
const Variant kVariants[] = {
    {"truncated-to-header", [](auto& s) { s.resize(sizeof(layout::Header)); }},
    {"more-sites-claimed-than-capacity",
     [](auto& s) { change_header(s, [](auto& h) { h.sites_claimed = 0xffffffffu; }); }},
    {"exe-path-beyond-the-pool",
     [](auto& s) { change_header(s, [](auto& h) { h.exe_path = {h.strings_capacity - 1, 2}; }); }},
    {"site-deeper-than-max-depth",
     [](auto& s) { change_last_site(s, [](auto& site) { site.depth = 0xffffffffu; }); }},
    {"site-with-unterminated-ruby-file",
     [](auto& s) {
         const uint32_t pool_end = load<layout::Header>(s, 0).strings_capacity;
         change_last_site(s, [pool_end](auto& site) { site.ruby_file = pool_end; });
     }},
};

void write(const fs::path& path, const std::vector<char>& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
    const bool with_variants = argc == 5 && std::strcmp(argv[4], "--with-variants") == 0;
    if (argc != 4 && !with_variants) {
        std::cerr << "usage: compact_segment <segment file> <output directory> <name> [--with-variants]\n";
        return 2;
    }
    std::ifstream file(argv[1], std::ios::binary);
    const std::vector<char> segment{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    if (segment.size() < sizeof(layout::Header) ||
        std::memcmp(segment.data(), layout::kMagic, sizeof layout::kMagic) != 0) {
        std::cerr << argv[1] << " is not a leakwrap segment\n";
        return 1;
    }
    const std::vector<char> compacted = compact(segment);
    const fs::path directory = argv[2];
    write(directory / argv[3], compacted);
    for (const Variant& variant : kVariants) {
        if (!with_variants) break;
        std::vector<char> broken = compacted;
        variant.change(broken);
        write(directory / (std::string(argv[3]) + "." + variant.name), broken);
    }
    return 0;
}
