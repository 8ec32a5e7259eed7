// Real, allocation-heavy programs behave exactly the same under the preload: same stdout, same
// stderr, same exit code as without it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;
using Prepare = void (*)(const TemporaryDirectory&);

void nothing_to_prepare(const TemporaryDirectory&) {}

Completed run_in_fresh_directory(const std::vector<std::string>& argv, Environment environment, Prepare prepare) {
    TemporaryDirectory directory;
    prepare(directory);
    environment.set("HOME", directory.path().string());
    return run(argv, environment, directory.path().string(), 120s);
}

void expect_same_behaviour_under_preload(const std::vector<std::string>& argv, Prepare prepare = nothing_to_prepare,
                                         const std::map<std::string, std::string>& variables = {}) {
    Environment bare = Environment::bare();
    Environment profiled = Environment::profiled();
    for (const auto& [name, value] : variables) {
        bare.set(name, value);
        profiled.set(name, value);
    }
    const Completed without = run_in_fresh_directory(argv, bare, prepare);
    ASSERT_EQ(without.exit_code, 0) << "the smoke workload itself fails:\n" << without.err;
    ASSERT_NE(without.out, "") << "the smoke workload should print something to compare";
    const Completed with = run_in_fresh_directory(argv, profiled, prepare);
    EXPECT_EQ(with.exit_code, without.exit_code) << with.err;
    EXPECT_EQ(with.out, without.out);
    EXPECT_EQ(with.err, without.err);
}

TEST(Smoke, Python) {
    expect_same_behaviour_under_preload({paths::python3, "-c", R"(
import collections, hashlib, json, re, sys
text = " ".join(f"{i * i:x}{'abc'[i % 3] * (i % 7)}" for i in range(30000))
words = collections.Counter(re.findall(r"[a-f]+", text))
document = json.dumps({"top": words.most_common(5), "distinct": len(words)}, sort_keys=True)
print(hashlib.sha256(document.encode()).hexdigest(), document[:120])
print("words:", sum(words.values()), file=sys.stderr)
)"});
}

TEST(Smoke, Perl) {
    expect_same_behaviour_under_preload({paths::perl, "-e", R"(
my %groups;
$groups{$_ % 977} .= chr(97 + $_ % 26) for 1 .. 30000;
my $summary = join ",", map { "$_=" . length($groups{$_}) } sort { $a <=> $b } keys %groups;
my @sorted = sort { length($groups{$b}) <=> length($groups{$a}) || $a <=> $b } keys %groups;
print length($summary), " ", substr($summary, 0, 60), " @sorted[0..4]\n";
warn "groups: " . scalar(keys %groups) . "\n";
)"});
}

TEST(Smoke, Git) {
    const std::string script = R"(set -e
git() { "$0" "$@"; }
git init -q -b main .
printf 'alpha\nbeta\n' > letters.txt
seq 1 400 > numbers.txt
git add .
git commit -q -m "first"
printf 'alpha\ngamma\nbeta\n' > letters.txt
seq 1 3 500 > numbers.txt
git commit -q -am "second"
git log --stat
git diff HEAD~1 HEAD
)";
    const std::string when = "2026-01-02T03:04:05+00:00";
    expect_same_behaviour_under_preload({"/bin/sh", "-c", script, paths::git}, nothing_to_prepare,
                                        {{"GIT_AUTHOR_NAME", "Leak Wrap"},
                                         {"GIT_AUTHOR_EMAIL", "leakwrap@example.invalid"},
                                         {"GIT_AUTHOR_DATE", when},
                                         {"GIT_COMMITTER_NAME", "Leak Wrap"},
                                         {"GIT_COMMITTER_EMAIL", "leakwrap@example.invalid"},
                                         {"GIT_COMMITTER_DATE", when},
                                         {"GIT_CONFIG_NOSYSTEM", "1"},
                                         {"GIT_PAGER", "cat"}});
}

TEST(Smoke, TheBuildsOwnCxxCompiler) {
    auto write_source = [](const TemporaryDirectory& directory) {
        std::ofstream(directory.path() / "smoke.cpp") << R"(#include <cstdio>
#include <map>
#include <string>
#warning "the compiler's stderr is compared too"
int main() {
    std::map<std::string, int> lengths;
    for (int i = 0; i < 5000; ++i) lengths[std::to_string(i * 7919 % 10007)] += i;
    long sum = 0;
    for (const auto& [key, value] : lengths) sum += static_cast<long>(key.size()) * value;
    std::printf("%zu %ld\n", lengths.size(), sum);
}
)";
    };
    expect_same_behaviour_under_preload(
        {"/bin/sh", "-c", "\"$0\" -std=c++17 -O1 -o smoke smoke.cpp && ./smoke", paths::cxx_compiler}, write_source);
}

}  // namespace
}  // namespace leakwrap::e2e
