#!/usr/bin/env bash
# Runs the malloc/free micro benchmark bare and under LD_PRELOAD=libleakwrap.so and prints, per
# benchmark, the time per iteration of both and their ratio.
# Usage: test/bench/run_bench.sh [build-dir] [extra benchmark flags...]
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
shift || true
bench=$build/bin/malloc_free_bench
preload=$build/lib/libleakwrap.so
for file in "$bench" "$preload"; do
  [[ -e $file ]] || { echo "missing $file: build the project first (scripts/test.sh or cmake --build)" >&2; exit 1; }
done

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

echo "running bare..." >&2
env -u LD_PRELOAD "$bench" --benchmark_format=json --benchmark_min_time=0.2 "$@" > "$results/bare.json"
echo "running under LD_PRELOAD=$preload..." >&2
LD_PRELOAD=$preload "$bench" --benchmark_format=json --benchmark_min_time=0.2 "$@" > "$results/preloaded.json"

python3 - "$results/bare.json" "$results/preloaded.json" <<'PY'
import json, sys

NS_PER_UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}

def times(path):
    with open(path) as f:
        return {b["name"]: b["real_time"] * NS_PER_UNIT[b["time_unit"]] for b in json.load(f)["benchmarks"]}

bare, preloaded = times(sys.argv[1]), times(sys.argv[2])
print(f"{'benchmark':<28}{'bare ns':>12}{'preloaded ns':>15}{'ratio':>9}")
for name, bare_ns in bare.items():
    loaded_ns = preloaded[name]
    print(f"{name:<28}{bare_ns:>12.1f}{loaded_ns:>15.1f}{loaded_ns / bare_ns:>9.2f}")
PY
