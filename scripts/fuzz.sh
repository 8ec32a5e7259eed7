#!/usr/bin/env bash
# Fuzzes the segment parser (leakwrap::parse_segment) with libFuzzer, AddressSanitizer and UBSan:
# configures a separate clang build with -DLEAKWRAP_FUZZ=ON, builds the fuzzer and runs it from
# the seed corpus in test/fuzz/corpus until it has made RUNS executions or spent SECONDS.
#
#   scripts/fuzz.sh [RUNS (default 1000000)] [SECONDS (default 1200)]
#
# New inputs go to a scratch corpus in the build directory, never into test/fuzz/corpus. A crash
# leaves its input as crash-* in the current directory; reproduce it with
#   $LEAKWRAP_FUZZ_BUILD_DIR/bin/parse_segment_fuzzer crash-<hash>
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
seconds=${2:-1200}
build=${LEAKWRAP_FUZZ_BUILD_DIR:-build-fuzz}

scripts/setup.sh
CC=clang CXX=clang++ cmake -S . -B "$build" -DLEAKWRAP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target parse_segment_fuzzer -j2

mkdir -p "$build/fuzz-corpus"
exec "$build/bin/parse_segment_fuzzer" -runs="$runs" -max_total_time="$seconds" -max_len=65536 \
  -print_final_stats=1 "$build/fuzz-corpus" test/fuzz/corpus
