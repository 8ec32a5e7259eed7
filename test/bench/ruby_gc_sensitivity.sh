#!/usr/bin/env bash
# How much of leakwrap's peak-RSS ratio on a Ruby job is Ruby's garbage collector taking another
# course, not leakwrap's memory. Ruby marks the machine stack conservatively: stale words below
# the live frames that look like object references keep objects alive, and which ones survive
# decides when major GCs come and how many heap pages Ruby keeps. Any malloc wrapper that runs
# code below its caller's frame overwrites those words and can shift that course, one way or the
# other, whatever it records; so can anything that moves the program's stack, such as the size of
# its environment. For one command line and environment the course is the same run after run, so
# compare.sh's medians repeat it: on ruby_json, bare Ruby maps 764 heap pages and Ruby under any
# stack-touching preload 1014 (counted with strace), 7.8 MiB more.
#
# Runs each job (compare.sh's rdoc and ruby_json, as compare.sh runs them) under three variants:
# bare; `touch`, a control preload that only writes zeros over the stack below malloc's caller
# and records nothing (test/bench/workloads/stack_touch.cpp); and leakwrap in exact mode. Each
# variant runs once per environment padding (LEAKWRAP_BENCH_PADDING of 0, 40, 80, ... bytes, as
# compare.sh gives its runs), which moves the stack and samples the GC's courses, alternating the
# variants. Prints a Markdown table
# of the median, smallest and largest peak RSS of each variant and the ratios of the medians:
# exact / touch is what leakwrap adds over a wrapper that only disturbs the stack.
#
# Usage: test/bench/ruby_gc_sensitivity.sh [-n PADDINGS] [-b BUILD_DIR] [JOB...]
#   -n PADDINGS    environment paddings, i.e. runs of each variant (default 9)
#   -b BUILD_DIR   the build with lib/libleakwrap.so and lib/libbench_stack_touch.so (default:
#                  build/, or $LEAKWRAP_BUILD_DIR); build it with
#                  `cmake --build BUILD_DIR --target bench_tools`
#   JOB...         ruby_json, rdoc (default: both)
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"

paddings=9
build_dir=
while getopts "n:b:" option; do
  case $option in
    n) paddings=$OPTARG ;;
    b) build_dir=$OPTARG ;;
    *) sed -n '/^# Usage/,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
jobs=("$@")
((${#jobs[@]} > 0)) || jobs=(ruby_json rdoc)
[[ $paddings =~ ^[1-9][0-9]*$ ]] || { echo "-n wants a number of paddings, not $paddings" >&2; exit 2; }

bench_find_build "$build_dir"
touch_preload=$bench_build/lib/libbench_stack_touch.so
bench_require "$bench_preload" "$touch_preload"
command -v ruby > /dev/null || { echo "no ruby in PATH" >&2; exit 1; }
for job in "${jobs[@]}"; do
  case $job in
    rdoc | ruby_json) ;;
    *) echo "unknown job $job (ruby_json, rdoc)" >&2; exit 2 ;;
  esac
  reason=$(bench_ruby_job_check "$job")
  [[ -z $reason ]] || { echo "$job: $reason" >&2; exit 1; }
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# peak_rss_kib VARIANT RUN
peak_rss_kib() {
  local preload=
  case $1 in
    touch) preload=$touch_preload ;;
    exact) preload=$bench_preload ;;
  esac
  rm -rf "$scratch/ri"
  env LD_PRELOAD="$preload" LEAKWRAP_BENCH_PADDING="$(bench_padding "$2")" \
    /usr/bin/time -f '%M' -o "$scratch/rss" "${job_argv[@]}" > /dev/null
  cat "$scratch/rss"
}

mib() { awk -v kib="$1" 'BEGIN { printf "%.1f", kib / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
# summary < KiB per line: "MEDIAN MIN MAX"
summary() {
  sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}

variants=(bare touch exact)
echo "| job | peak RSS MiB, median (min–max): bare | touch | exact | touch / bare | exact / bare | exact / touch |"
echo "|---|---|---|---|---|---|---|"
for job in "${jobs[@]}"; do
  bench_ruby_job_argv "$job" "$scratch"
  declare -A samples=() median=() cell=()
  for ((run = 0; run < paddings; ++run)); do
    for variant in "${variants[@]}"; do samples[$variant]+="$(peak_rss_kib "$variant" "$run")"$'\n'; done
  done
  for variant in "${variants[@]}"; do
    read -r middle low high < <(grep . <<< "${samples[$variant]}" | summary)
    median[$variant]=$middle
    cell[$variant]="$(mib "$middle") ($(mib "$low")–$(mib "$high"))"
  done
  echo "| $job | ${cell[bare]} | ${cell[touch]} | ${cell[exact]}" \
    "| $(ratio "${median[touch]}" "${median[bare]}") | $(ratio "${median[exact]}" "${median[bare]}")" \
    "| $(ratio "${median[exact]}" "${median[touch]}") |"
done
