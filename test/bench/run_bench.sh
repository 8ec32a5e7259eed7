#!/usr/bin/env bash
# Runs the malloc/free micro benchmark bare, under libleakwrap.so in exact mode, and in sampling
# mode (LEAKWRAP_SAMPLE=524288), and prints per benchmark the time of one iteration of each and
# the ratios to bare. With --benchmark_repetitions=N the medians are compared.
# Usage: test/bench/run_bench.sh [build-dir] [extra benchmark flags...]
#   e.g. test/bench/run_bench.sh build --benchmark_filter=cross_thread --benchmark_repetitions=5
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"

bench_find_build "${1:-}"
shift || true
bench=$bench_build/bin/malloc_free_bench
bench_require "$bench" "$bench_preload"

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

variants=(bare exact sampling)
for variant in "${variants[@]}"; do
  echo "running $variant..." >&2
  bench_variant_prefix "$variant" "$results"
  "${bench_prefix[@]}" "$bench" --benchmark_format=json --benchmark_min_time=0.2 "$@" \
    > "$results/$variant.json"
done

python3 - "$results" "${variants[@]}" <<'PY'
import json, sys

NS_PER_UNIT = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}

def times(path):
    """Nanoseconds per iteration by benchmark name: the median if repeated, else the one run."""
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    repeated = any(run.get("run_type") == "aggregate" for run in runs)
    result = {}
    for run in runs:
        if repeated and run.get("aggregate_name") != "median":
            continue
        result[run["run_name"]] = run["real_time"] * NS_PER_UNIT[run["time_unit"]]
    return result

results_dir, variants = sys.argv[1], sys.argv[2:]
by_variant = {variant: times(f"{results_dir}/{variant}.json") for variant in variants}
bare = by_variant["bare"]
others = variants[1:]
width = max(len(name) for name in bare) + 2
header = f"{'benchmark':<{width}}{'bare ns':>10}"
header += "".join(f"{variant + ' ns':>14}" for variant in others)
header += "".join(f"{variant + ' x':>12}" for variant in others)
print(header)
for name, bare_ns in bare.items():
    line = f"{name:<{width}}{bare_ns:>10.1f}"
    line += "".join(f"{by_variant[variant][name]:>14.1f}" for variant in others)
    line += "".join(f"{by_variant[variant][name] / bare_ns:>12.2f}" for variant in others)
    print(line)
PY
