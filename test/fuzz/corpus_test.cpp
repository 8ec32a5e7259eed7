// The fuzzer's seed corpus, run through parse_segment in every ordinary build: every seed and
// every prefix of it either parses or throws SegmentError. The real seeds must parse, so that a
// layout change that forgets the corpus (test/fuzz/make_corpus.sh) shows here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "segment_parser.h"

namespace leakwrap {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> contents_of(const fs::path& path) {
    std::vector<std::byte> bytes(fs::file_size(path));
    std::ifstream(path, std::ios::binary)
        .read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

// True if parsed, false if refused; anything else (a crash, another exception) fails the test.
bool parses(std::span<const std::byte> bytes) {
    try {
        parse_segment(bytes);
        return true;
    } catch (const SegmentError&) {
        return false;
    }
}

std::vector<fs::path> seeds() {
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(LEAKWRAP_FUZZ_CORPUS)) paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    return paths;
}

TEST(FuzzCorpus, RealSegmentsParse) {
    std::size_t real = 0;
    for (const fs::path& seed : seeds()) {
        if (seed.has_extension() && seed.extension() != ".") continue;  // variants are name.rule
        if (fs::file_size(seed) < 1024) continue;                       // the hand-made edge cases
        EXPECT_TRUE(parses(contents_of(seed))) << seed;
        ++real;
    }
    EXPECT_GE(real, 2u);
}

TEST(FuzzCorpus, EverySeedAndEveryPrefixParsesOrIsRefused) {
    std::size_t inputs = 0;
    for (const fs::path& seed : seeds()) {
        const std::vector<std::byte> bytes = contents_of(seed);
        for (std::size_t length = 0; length <= bytes.size(); length += length < 512 ? 1 : 61) {
            parses(std::span(bytes).first(length));
            ++inputs;
        }
        parses(bytes);
    }
    EXPECT_GT(inputs, 1000u);
}

}  // namespace
}  // namespace leakwrap
