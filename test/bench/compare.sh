#!/usr/bin/env bash
# Whole-program cost of leakwrap: runs every job bare, under libleakwrap.so in exact mode, in
# sampling mode (LEAKWRAP_SAMPLE=524288), and under heaptrack, alternating the four variants run
# by run, and prints a Markdown table of the median wall time and peak RSS of each variant as a
# ratio to bare, with the absolute bare numbers.
#
# Jobs: the three workloads of test/bench/workloads (written for this), and three real programs
# nobody here wrote: rdoc (Ruby), an ast census of Python's standard library, and the C++
# compiler proper (cc1plus, so that every variant profiles the same single process: heaptrack
# does not follow the children of g++).
#
# A run that exits non-zero, times out, or prints other output than bare is marked failed and
# left out of the medians.
#
# Usage: test/bench/compare.sh [-n RUNS] [-b BUILD_DIR] [-o TABLE_FILE] [JOB...]
#   -n RUNS        runs of each variant (default 5); the table shows medians
#   -b BUILD_DIR   the build with lib/libleakwrap.so and bin/workload_* (default: build/, or
#                  $LEAKWRAP_BUILD_DIR); build it with `cmake --build BUILD_DIR --target bench_tools`
#   -o TABLE_FILE  also write the Markdown output there
#   JOB...         only these jobs (default: all): server_churn producer_consumer small_objects
#                  rdoc python_ast cc1plus
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"

all_jobs=(server_churn producer_consumer small_objects rdoc python_ast cc1plus)
variants=(bare exact sampling heaptrack)
runs=5
build_dir=
table_file=
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while getopts 'n:b:o:h' option; do
  case $option in
    n) runs=$OPTARG ;;
    b) build_dir=$OPTARG ;;
    o) table_file=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
if (($#)); then jobs=("$@"); else jobs=("${all_jobs[@]}"); fi
for job in "${jobs[@]}"; do
  [[ " ${all_jobs[*]} " == *" $job "* ]] || { echo "compare.sh: unknown job '$job' (jobs: ${all_jobs[*]})" >&2; exit 2; }
done

bench_find_build "$build_dir"
bench_require "$bench_preload"
[[ -x /usr/bin/time ]] || { echo "compare.sh: /usr/bin/time is missing: run scripts/setup.sh (package time)" >&2; exit 1; }

ruby_library=/usr/lib/ruby/3.1.0
rdoc_input=$ruby_library/irb
python=/usr/bin/python3.11
python_library=/usr/lib/python3.11
python_packages=(email xml logging asyncio json unittest http multiprocessing concurrent)
cc1plus=$(g++ -print-prog-name=cc1plus 2>/dev/null || true)
compiled_file=$bench_repo/test/bench/workloads/producer_consumer.cpp

# job_command JOB SCRATCH_DIR: sets the array job_argv to the command line of JOB; its files
# go to SCRATCH_DIR. Returns 1 with a reason on stdout if JOB cannot run on this machine.
job_command() {
  local job=$1 scratch=$2
  case $job in
    server_churn | producer_consumer | small_objects)
      job_argv=("$bench_build/bin/workload_$job")
      [[ -x ${job_argv[0]} ]] || { echo "not built (target bench_tools)"; return 1; } ;;
    rdoc)
      job_argv=(rdoc --quiet --format=ri --output="$scratch/ri" "$rdoc_input")
      if ! command -v rdoc > /dev/null || [[ ! -d $rdoc_input ]]; then echo "no rdoc or no $rdoc_input"; return 1; fi ;;
    python_ast)
      job_argv=("$python" -I -B "$bench_repo/test/bench/jobs/ast_census.py")
      job_argv+=("${python_packages[@]/#/$python_library/}")
      [[ -x $python && -d $python_library ]] || { echo "no $python or no $python_library"; return 1; } ;;
    cc1plus)
      job_argv=("$cc1plus" -quiet -imultiarch "$(g++ -print-multiarch)" -D_GNU_SOURCE -O1 -std=c++20
        "$compiled_file" -o "$scratch/compiled.s")
      [[ -x $cc1plus ]] || { echo "no g++"; return 1; } ;;
  esac
}

variant_available() {
  [[ $1 != heaptrack ]] || command -v heaptrack > /dev/null
}

load_average() { cut -d' ' -f1 /proc/loadavg; }

work=$(mktemp -d /tmp/leakwrap-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
measurements=$work/measurements.tsv  # job variant run status wall_seconds peak_rss_kib
: > "$measurements"
loads=("$(load_average)")

# measure JOB VARIANT RUN TIME_LIMIT: one run; appends its line to $measurements.
measure() {
  local job=$1 variant=$2 run=$3 limit=$4
  local scratch=$work/run
  rm -rf "$scratch" && mkdir "$scratch"
  job_command "$job" "$scratch" > /dev/null
  bench_variant_prefix "$variant" "$scratch"
  local status=ok exit_code=0
  (cd "$scratch" && exec timeout -k 10 "$limit" /usr/bin/time -f '%e %M' -o "$scratch/time" \
    "${bench_prefix[@]}" "${job_argv[@]}" > "$scratch/stdout" 2> "$scratch/stderr") || exit_code=$?
  if [[ $variant == heaptrack ]]; then
    bench_strip_heaptrack_chatter < "$scratch/stdout" > "$scratch/output"
  else
    cp "$scratch/stdout" "$scratch/output"
  fi
  local wall=- rss=-
  if ((exit_code == 124 || exit_code == 137)); then
    status=timeout
  elif ((exit_code != 0)); then
    status="exit-$exit_code"
  elif [[ $variant == bare && ! -e $work/$job.expected ]]; then
    cp "$scratch/output" "$work/$job.expected"
  elif ! cmp -s "$scratch/output" "$work/$job.expected"; then
    status=wrong-output
  fi
  if [[ -s $scratch/time ]]; then
    read -r wall rss < <(tail -n 1 "$scratch/time")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$job" "$variant" "$run" "$status" "$wall" "$rss" >> "$measurements"
  printf '  %-18s run %d/%d  %-9s  %6s s  %8s KiB  %s\n' "$job" "$run" "$runs" "$variant" "$wall" "$rss" \
    "$status" >&2
  if [[ $status != ok ]]; then
    echo "    stderr of that run, first lines:" >&2
    head -n 5 "$scratch/stderr" | sed 's/^/      /' >&2
  fi
  rm -rf "$scratch"
}

started=$(date -u +%s)
for job in "${jobs[@]}"; do
  if ! reason=$(job_command "$job" "$work"); then
    printf '%s\t%s\t-\tskipped: %s\t-\t-\n' "$job" bare "$reason" >> "$measurements"
    echo "  $job skipped: $reason" >&2
    continue
  fi
  limit=600
  for ((run = 1; run <= runs; run++)); do
    # Rotate the order every run, starting with bare, so that no variant always follows another.
    for ((i = 0; i < ${#variants[@]}; i++)); do
      variant=${variants[(i + run - 1) % ${#variants[@]}]}
      if ! variant_available "$variant"; then
        ((run > 1)) || printf '%s\t%s\t-\tskipped: not installed\t-\t-\n' "$job" "$variant" >> "$measurements"
        continue
      fi
      measure "$job" "$variant" "$run" "$limit"
      if [[ $variant == bare && $run == 1 ]]; then
        # Any variant that takes 50 times longer than bare (and over a minute) counts as hung.
        bare_wall=$(awk -F'\t' '$2 == "bare" && $3 == 1 { print $5 }' "$measurements" | tail -n 1)
        [[ $bare_wall == - ]] || limit=$(awk -v wall="$bare_wall" 'BEGIN { l = int(wall * 50) + 1; print (l < 60 ? 60 : l) }')
      fi
    done
  done
  loads+=("$(load_average)")
done
elapsed=$(($(date -u +%s) - started))

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
python3 - "$measurements" "$runs" "$elapsed" "$(nproc)" "$cpu_model" "${loads[*]}" \
  "test/bench/compare.sh -n $runs${build_dir:+ -b $build_dir}${table_file:+ -o $table_file} $*" "${variants[@]}" <<'PY' | tee "${table_file:-/dev/null}"
import statistics
import sys
from collections import defaultdict

(measurements_file, runs, elapsed, cpus, cpu_model, loads, command), variants = sys.argv[1:8], sys.argv[8:]
THREADS = {"server_churn": 2, "producer_consumer": 2}
WHAT = {
    "server_churn": "larson-style: threads replace random 16-512 B blocks in a shared array",
    "producer_consumer": "xmalloc-style: one thread allocates 8-1024 B blocks, another frees them",
    "small_objects": "cfrac/espresso-style: linked bignums and trees of 16-64 B objects",
    "rdoc": "`rdoc --format=ri` over Ruby 3.1's irb library",
    "python_ast": "Python 3.11: `ast.parse` of 9 stdlib packages, node counts as JSON",
    "cc1plus": "g++ 12 compiler proper, `-O1` on test/bench/workloads/producer_consumer.cpp",
}

runs_by = defaultdict(list)  # (job, variant) -> [(status, wall, rss_kib)]
jobs = []
for line in open(measurements_file):
    job, variant, _run, status, wall, rss = line.rstrip("\n").split("\t")
    if job not in jobs:
        jobs.append(job)
    runs_by[job, variant].append((status, wall, rss))

def medians(job, variant):
    good = [(float(w), int(r)) for s, w, r in runs_by[job, variant] if s == "ok"]
    if not good:
        return None
    return statistics.median(w for w, _ in good), statistics.median(r for _, r in good)

def failures(job, variant):
    bad = [s for s, _, _ in runs_by[job, variant] if s != "ok"]
    if not bad:
        return ""
    kinds = ", ".join(sorted(set(bad)))
    total = len(runs_by[job, variant])
    return f"failed {len(bad)}/{total} ({kinds})" if not bad[0].startswith("skipped") else bad[0]

others = variants[1:]
header = ["job", "threads", "bare wall s", "bare peak RSS MiB"]
for variant in others:
    header += [f"{variant} wall", f"{variant} RSS"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for job in jobs:
    bare = medians(job, "bare")
    row = [job, str(THREADS.get(job, 1))]
    if bare is None:
        row += [failures(job, "bare") or "failed", ""] + [""] * (2 * len(others))
    else:
        bare_wall, bare_rss = bare
        row += [f"{bare_wall:.2f}", f"{bare_rss / 1024:.1f}"]
        for variant in others:
            result, failed = medians(job, variant), failures(job, variant)
            if result is None:
                row += [failed or "failed", ""]
                continue
            mark = f" ({failed})" if failed else ""
            row += [f"{result[0] / bare_wall:.2f}×{mark}", f"{result[1] / bare_rss:.2f}×"]
    print("| " + " | ".join(row) + " |")
print()
print("Ratios are medians of each variant over bare's median; exact is `LD_PRELOAD=libleakwrap.so`,")
print("sampling adds `LEAKWRAP_SAMPLE=524288`, heaptrack is `heaptrack -o DIR prog` (its wall time")
print("includes writing its compressed data; its RSS is the larger of the program and")
print("heaptrack_interpret, as /usr/bin/time's %M reports the largest process).")
print()
for job in jobs:
    if job in WHAT:
        print(f"- `{job}`: {WHAT[job]}")
print()
load_values = [float(x) for x in loads.split()]
print(f"Machine: {cpus} CPUs, {cpu_model}. {runs} runs per variant, alternating, in "
      f"{int(elapsed) // 60} min {int(elapsed) % 60} s. Load average (1 min) at the start "
      f"{load_values[0]:.2f}, after each job {', '.join(f'{x:.2f}' for x in load_values[1:])}.")
print(f"Command: `{command.strip()}`")
PY
