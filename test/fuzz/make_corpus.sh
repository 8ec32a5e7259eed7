#!/usr/bin/env bash
# Rebuilds the seed corpus of the segment parser's fuzzer (test/fuzz/corpus) from real segments:
# test programs run under the preload with LEAKWRAP_KEEP=1, compacted by compact_segment. Run it
# after a layout change, from a configured and built tree:
#
#   test/fuzz/make_corpus.sh [build directory, default build]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
corpus=test/fuzz/corpus
cmake --build "$build" --target compact_segment alloc_kinds threads_cross_free -j2 >/dev/null

# Runs a test program to its end (stdin at EOF releases it) and compacts the segment it kept.
seed() {
  local name=$1 program=$2 depth=$3 variants=${4:-}
  LD_PRELOAD="$build/lib/libleakwrap.so" LEAKWRAP_KEEP=1 LEAKWRAP_DEPTH=$depth \
    "$build/test/programs/$program" </dev/null >/dev/null &
  local pid=$!
  wait $pid
  "$build/bin/compact_segment" "/dev/shm/leakwrap.$pid" "$corpus" "$name" $variants
  rm -f "/dev/shm/leakwrap.$pid"
}

rm -rf "$corpus"
mkdir -p "$corpus"
seed alloc-kinds alloc_kinds 4
seed threads-cross-free threads_cross_free 2 --with-variants
# A small Ruby process: stacks with Ruby backtraces, and the variants that break a Ruby frame.
ruby_pid=$(LD_PRELOAD="$build/lib/libleakwrap.so" LEAKWRAP_KEEP=1 LEAKWRAP_DEPTH=2 LEAKWRAP_RUBY_DEPTH=2 \
  ruby --disable-gems -e 'puts Process.pid; def leak(n) = n.times.map { |i| "x" * (40 + i % 3) }; $kept = leak(50)')
"$build/bin/compact_segment" "/dev/shm/leakwrap.$ruby_pid" "$corpus" ruby \
  --with-variant=stack-with-unterminated-ruby-file,ruby-frame-calling-itself
rm -f "/dev/shm/leakwrap.$ruby_pid"
: >"$corpus/empty"
printf 'LEAKWRAP' >"$corpus/magic-only"
du -sh "$corpus"
