#!/usr/bin/env bash
# What reading a profile costs: makes a real segment with many sites (rdoc over Ruby's irb
# library under the preload, kept with LEAKWRAP_KEEP=1: about 80,000 sites), then times
# leakwrap-report on it, median of RUNS runs each:
#   - snapshot: read and parse the whole segment, merge its sites into rows, symbolize the top
#     row (`--top 1`);
#   - top N rows: the same and symbolize every frame of the N largest rows (text and JSON).
# The target's side needs no measurement: the reader maps the segment read-only, reads its site
# records through the mapping, copies the rest and takes no lock the target could wait for.
#
# Usage: test/bench/reader_bench.sh [-n RUNS (default 5)] [-b BUILD_DIR] [-r ROWS (default 10000)]
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"

runs=5
rows=10000
build_dir=
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while getopts 'n:b:r:h' option; do
  case $option in
    n) runs=$OPTARG ;;
    b) build_dir=$OPTARG ;;
    r) rows=$OPTARG ;;
    *) usage ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ && $rows =~ ^[1-9][0-9]*$ ]] || usage
bench_find_build "$build_dir"
report=$bench_build/bin/leakwrap-report
bench_require "$bench_preload" "$report"
command -v rdoc > /dev/null || { echo "reader_bench.sh: needs rdoc (package ruby)" >&2; exit 1; }

scratch=$(mktemp -d)
pid=
trap 'rm -rf "$scratch"; [[ -n $pid ]] && rm -f "/dev/shm/leakwrap.$pid"' EXIT
LD_PRELOAD=$bench_preload LEAKWRAP_KEEP=1 rdoc --quiet --format=ri --output="$scratch/ri" \
  /usr/lib/ruby/3.1.0/irb &
pid=$!
wait $pid
sites=$("$report" --format json --top 1 "$pid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["sites"])')

# median_seconds ARGS...: the median wall time of `leakwrap-report ARGS... PID` over RUNS runs.
median_seconds() {
  local times=() start end
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$report" "$@" "$pid" > /dev/null
    end=$(date +%s%N)
    times+=("$(( (end - start) / 1000000 ))")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p" | awk '{printf "%.2f s", $1 / 1000}'
}

echo "segment of rdoc: $sites sites ($(du -h --apparent-size "/dev/shm/leakwrap.$pid" | cut -f1) file, sparse)"
echo "snapshot (--top 1):               $(median_seconds --top 1)"
echo "top $rows rows, text:            $(median_seconds --top "$rows")"
echo "top $rows rows, --format json:   $(median_seconds --format json --top "$rows")"
echo "median of $runs runs; machine: $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
