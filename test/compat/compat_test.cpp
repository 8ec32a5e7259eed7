// Real programs behave exactly the same under the preload: same stdout, same stderr, same exit
// code as without it. Each workload runs twice, bare and profiled, each time in a fresh working
// directory that it may fill with files first. (Python, Perl, git and the build's C++ compiler
// are in test/e2e/same_output_test.cpp; this suite adds the rest of a typical machine.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "temporary_directory.h"

namespace leakwrap::e2e {
namespace {

namespace fs = std::filesystem;

struct Workload {
    std::vector<std::string> argv;
    std::map<std::string, std::string> files;      // written into the working directory first
    std::map<std::string, std::string> variables;  // set for both runs
};

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
}

// The two runs get different directories; the output names them as <dir>.
Completed run_in_fresh_directory(const Workload& workload, Environment environment) {
    TemporaryDirectory directory;
    for (const auto& [name, content] : workload.files) std::ofstream(directory.path() / name) << content;
    environment.set("HOME", directory.path().string());
    for (const auto& [name, value] : workload.variables) environment.set(name, value);
    Completed completed = run(workload.argv, environment, directory.path().string(), 60s);
    replace_all(completed.out, directory.path().string(), "<dir>");
    replace_all(completed.err, directory.path().string(), "<dir>");
    return completed;
}

void expect_same_behaviour_under_preload(const Workload& workload) {
    const Completed bare = run_in_fresh_directory(workload, Environment::bare());
    ASSERT_EQ(bare.exit_code, 0) << "the workload itself fails:\n" << bare.err;
    ASSERT_NE(bare.out, "") << "the workload should print something to compare";
    const Completed profiled = run_in_fresh_directory(workload, Environment::profiled());
    EXPECT_EQ(profiled.exit_code, bare.exit_code) << profiled.err;
    EXPECT_EQ(profiled.out, bare.out);
    EXPECT_EQ(profiled.err, bare.err);
}

// Tools the machine may lack are skipped, not failed; the build passes "" for a missing one.
#define SKIP_UNLESS_INSTALLED(tool) \
    if (std::string(tool).empty()) GTEST_SKIP() << #tool " is not installed"

TEST(Compat, PythonStandardLibrary) {
    expect_same_behaviour_under_preload({{paths::python3, "-c", R"script(
import base64, bisect, csv, datetime, decimal, difflib, fractions, functools, heapq, io, itertools
import queue, random, sqlite3, statistics, struct, sys, textwrap, threading, zlib
import xml.etree.ElementTree as ET
random.seed(6)
numbers = [random.randint(0, 10**6) for _ in range(20000)]
decimal.getcontext().prec = 50
print(sum(decimal.Decimal(n) / 7 for n in numbers[:2000]))
print(sum(fractions.Fraction(n, n % 97 + 1) for n in numbers[:500]).limit_denominator(10**6))
print(statistics.mean(numbers), statistics.median(numbers), round(statistics.pstdev(numbers), 6))
packed = zlib.compress(struct.pack(f"<{len(numbers)}I", *numbers), 9)
print(len(packed), base64.b64encode(packed[:24]).decode())
table = io.StringIO()
csv.writer(table).writerows(itertools.islice(zip(numbers, sorted(numbers), map(hex, numbers)), 3000))
print(len(table.getvalue()), heapq.nsmallest(3, numbers), bisect.bisect(sorted(numbers), 500000))
root = ET.Element("root")
for n in numbers[:3000]:
    ET.SubElement(root, "n", value=str(n)).text = textwrap.shorten("x " * (n % 40), 30)
print(len(ET.tostring(root)))
db = sqlite3.connect(":memory:")
db.execute("create table t (n integer, tag text)")
db.executemany("insert into t values (?, ?)", ((n, str(n % 13)) for n in numbers))
print(db.execute("select tag, count(*), sum(n) from t group by tag order by tag limit 3").fetchall())
work, results = queue.Queue(), queue.Queue()
def worker():
    while (item := work.get()) is not None:
        results.put(functools.reduce(lambda a, b: a ^ b, range(item)))
threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads: t.start()
for n in numbers[:400]: work.put(n % 5000)
for t in threads: work.put(None)
for t in threads: t.join()
print(sum(results.get() for _ in range(400)))
print(datetime.date(2026, 1, 2) + datetime.timedelta(days=sum(numbers) % 1000))
print("".join(difflib.unified_diff(["a\n", "b\n"], ["a\n", "c\n"])), file=sys.stderr)
)script"}});
}

TEST(Compat, Ruby) {
    SKIP_UNLESS_INSTALLED(LEAKWRAP_RUBY);
    expect_same_behaviour_under_preload({{LEAKWRAP_RUBY, "-e", R"script(
words = (1..30000).map { |i| (i * 7919 % 10007).to_s(36) * (i % 4 + 1) }
groups = words.group_by(&:size).transform_values(&:count).sort.first(5)
index = Hash.new { |hash, key| hash[key] = [] }
words.each_with_index { |word, i| index[word[0]] << i if i.even? }
puts groups.inspect, index.keys.sort.join, index.values.sum(&:size)
puts words.sort.uniq.each_slice(1000).map(&:first).first(4).inspect
warn "ruby #{words.sum(&:size)}"
)script"}});
}

TEST(Compat, GccCompilesAndRunsAProgram) {
    expect_same_behaviour_under_preload(
        {{"/bin/sh", "-c", "\"$0\" -std=c11 -O2 -o tree tree.c && ./tree", LEAKWRAP_C_COMPILER},
         {{"tree.c", R"script(#include <stdio.h>
#include <stdlib.h>
#warning "the compiler's stderr is compared too"
struct node { long key; struct node *left, *right; };
static struct node *insert(struct node *root, long key) {
    if (!root) { root = calloc(1, sizeof *root); root->key = key; return root; }
    if (key < root->key) root->left = insert(root->left, key); else root->right = insert(root->right, key);
    return root;
}
static long depth(const struct node *root) {
    if (!root) return 0;
    long l = depth(root->left), r = depth(root->right);
    return 1 + (l > r ? l : r);
}
int main(void) {
    struct node *root = NULL;
    for (long i = 0; i < 50000; ++i) root = insert(root, i * 7919 % 100003);
    printf("depth %ld\n", depth(root));
    return 0;
}
)script"}}});
}

TEST(Compat, CmakeConfiguresAProject) {
    expect_same_behaviour_under_preload({{LEAKWRAP_CMAKE, "-S", ".", "-B", "build", "-G", "Unix Makefiles"},
                                         {{"CMakeLists.txt", R"script(cmake_minimum_required(VERSION 3.20)
project(compat LANGUAGES C)
include(CheckIncludeFile)
include(CheckSymbolExists)
check_include_file(malloc.h HAVE_MALLOC_H)
check_symbol_exists(malloc_usable_size malloc.h HAVE_MALLOC_USABLE_SIZE)
file(GLOB_RECURSE sources ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
configure_file(config.h.in config.h)
message(STATUS "configured with ${HAVE_MALLOC_H} ${HAVE_MALLOC_USABLE_SIZE}")
add_executable(hello hello.c)
)script"},
                                          {"config.h.in", "#cmakedefine HAVE_MALLOC_H\n"},
                                          {"hello.c", "int main(void) { return 0; }\n"}}});
}

TEST(Compat, Sqlite3RunsAScriptedWorkload) {
    SKIP_UNLESS_INSTALLED(LEAKWRAP_SQLITE3);
    expect_same_behaviour_under_preload(
        {{LEAKWRAP_SQLITE3, "compat.db", ".read workload.sql"}, {{"workload.sql", R"script(
create table item (id integer primary key, name text, weight real, bucket integer);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into item (name, weight, bucket) select hex(i * 7919), (i * 37 % 1000) / 10.0, i % 50 from n;
create index item_bucket on item (bucket, weight);
select bucket, count(*), round(sum(weight), 1), min(name) from item group by bucket order by bucket limit 5;
update item set weight = weight * 2 where bucket % 7 = 0;
delete from item where id % 3 = 0;
select count(*), round(avg(weight), 4) from item;
select a.bucket, count(*) from item a join item b on a.bucket = b.bucket and a.id + 1 = b.id group by a.bucket order by 2 desc, 1 limit 3;
vacuum;
select group_concat(name, ',') from (select name from item order by weight desc, id limit 5);
)script"}}});
}

TEST(Compat, NodeEvaluatesAScript) {
    SKIP_UNLESS_INSTALLED(LEAKWRAP_NODE);
    expect_same_behaviour_under_preload({{LEAKWRAP_NODE, "-e", R"script(
const zlib = require("zlib");
const words = Array.from({length: 10000}, (_, i) => ((i * 7919) % 10007).toString(36).repeat(i % 4 + 1));
const counts = new Map();
for (const word of words) counts.set(word.length, (counts.get(word.length) || 0) + 1);
const packed = zlib.deflateSync(Buffer.from(JSON.stringify(words)));
console.log([...counts].sort((a, b) => a[0] - b[0]).slice(0, 5), packed.length);
console.error("node", words.reduce((sum, word) => sum + word.length, 0));
)script"}});
}

TEST(Compat, TarAndGzipPackAndListATree) {
    expect_same_behaviour_under_preload({{"/bin/sh", "-c", R"script(set -e
for d in a b c; do mkdir -p tree/$d/deeper; for i in $(seq 1 12); do seq $i 3 40000 > tree/$d/file$i; done; done
cp tree/a/file7 tree/b/deeper/copy
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - tree | gzip -9 -n > tree.tgz
tar -tvzf tree.tgz | sort
md5sum tree.tgz
mkdir unpacked && tar -xzf tree.tgz -C unpacked && diff -r tree unpacked/tree && echo identical
)script"}});
}

TEST(Compat, ShellPipelineForksAndExecs) {
    expect_same_behaviour_under_preload({{"/bin/sh", "-c", "seq 1 20000 | sort -r | md5sum"}});
}

TEST(Compat, LibraryLoadedAndUnloadedInALoop) {
    expect_same_behaviour_under_preload(
        {{paths::program("torture_dlopen"), paths::program("libtorture_plugin.so"), "loop"}});
}

TEST(Compat, LibraryLoadedWithDeepbindAllocatingForItselfAndItsCaller) {
    expect_same_behaviour_under_preload(
        {{paths::program("torture_dlopen"), paths::program("libtorture_plugin.so"), "deepbind"}});
}

TEST(Compat, SignalHandlerAllocatesWhileTheMainLoopAllocates) {
    expect_same_behaviour_under_preload({{paths::program("torture_signals")}});
}

TEST(Compat, ForeignBlocksOfEveryShapePassThrough) {
    expect_same_behaviour_under_preload({{paths::program("torture_foreign")}});
}

}  // namespace
}  // namespace leakwrap::e2e
