#!/usr/bin/env bash
# Whole-program cost of leakwrap: runs every job bare, under libleakwrap.so in exact mode, in
# sampling mode (LEAKWRAP_SAMPLE=524288), under jemalloc's heap profiler (Debian's libjemalloc2
# preloaded with MALLOC_CONF=prof:true,lg_prof_sample:19, the same sampling period: the anchor
# for the sampling mode) and under heaptrack, alternating the five variants run by run, and
# prints a Markdown table of the median speed and peak RSS of each variant as a ratio to bare,
# with the absolute bare numbers; and a second table of what leakwrap recorded in each job: the
# number of sites and the resident size of the segment (medians), in exact and sampling mode.
#
# Jobs that run to their end are measured by /usr/bin/time (wall time, peak RSS of the largest
# process): the five workloads of test/bench/workloads (written for this), dash running /bin/true
# in a loop (shell_loop: a fork, an exec and a start each time), and real programs
# nobody here wrote: rdoc (Ruby), JSON generate/parse round trips in Ruby
# (test/bench/jobs/json_round_trips.rb), an ast census of Python's standard library, and the C++
# compiler proper (cc1plus, so that every variant profiles the same single process: heaptrack
# does not follow the children of g++). In exact and sampling mode they run with LEAKWRAP_KEEP=1,
# and the kept segment of the run (/dev/shm/leakwrap.<its pid>) is read and then deleted.
#
# Three jobs are servers, puma from Debian on a loopback port the kernel picks (127.0.0.1 only):
#   puma_siege  a tiny Rack app; siege -b -c 4 -r 2500 (10000 requests, one connection each) from
#               this machine; its speed is siege's transaction rate (req/s), its ratio bare's rate
#               over the variant's (above 1 is slower, as for times)
#   rails_boot  the Rails app of examples/rails (its C extension built once, as soak.sh does);
#               its speed is the time from starting puma until it logs "Use Ctrl-C to stop"
#   rails_soak  the same app once booted, under siege -b -c 4 -r 250 (1000 requests): its speed is
#               siege's transaction rate, its RSS the steady one after serving them
# Since siege runs on the same CPUs, puma_siege and rails_soak also report the CPU time puma
# itself used while siege ran (user + system, /proc/PID/stat), in a table of its own: the cost
# by the work done, less noisy than a rate two processes share the CPUs to make.
# Their peak RSS is the largest VmHWM of the process tree (puma; with heaptrack also its
# interpreter), read in /proc just before puma is stopped with SIGINT (puma_siege and
# rails_soak: after siege, rails_boot: at boot), and so is the live segment. Their output,
# compared with bare's, is siege's count of successful and failed requests, and the page Rails
# serves after boot.
#
# Run N of every variant gets an environment variable LEAKWRAP_BENCH_PADDING of 40 x (N - 1)
# bytes (bench_lib.sh, bench_padding): it moves the stack, so that the runs sample the courses of
# Ruby's conservative GC instead of repeating one (test/bench/ruby_gc_sensitivity.sh).
#
# A run that exits non-zero, times out, or prints other output than bare is marked failed and
# left out of the medians. A job or variant that cannot run on this machine is skipped, with the
# reason in the table.
#
# Usage: test/bench/compare.sh [-n RUNS] [-b BUILD_DIR] [-B BASELINE_LIB] [-v VARIANTS] [-o TABLE_FILE] [JOB...]
#   -n RUNS        runs of each variant (default 5); the tables show medians
#   -b BUILD_DIR   the build with lib/libleakwrap.so, bin/leakwrap-report and bin/workload_*
#                  (default: build/, or $LEAKWRAP_BUILD_DIR); build it with
#                  `cmake --build BUILD_DIR --target bench_tools`
#   -B BASELINE_LIB  adds the variant baseline: exact mode with this libleakwrap.so (an earlier
#                  commit's, to measure a change before and after in one run); its segments are
#                  read with BUILD_DIR's leakwrap-report
#   -v VARIANTS    only these variants, space-separated (default: all; bare always runs)
#   -o TABLE_FILE  also write the Markdown output there
#   JOB...         only these jobs (default: all): server_churn producer_consumer small_objects
#                  thread_per_task fork_exit shell_loop rdoc ruby_json python_ast cc1plus puma_siege
#                  rails_boot rails_soak
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
# shellcheck source=../../examples/puma_server.sh
source "$(dirname "$0")/../../examples/puma_server.sh"

all_jobs=(server_churn producer_consumer small_objects thread_per_task fork_exit shell_loop rdoc ruby_json python_ast cc1plus
  puma_siege rails_boot rails_soak)
server_jobs=(puma_siege rails_boot rails_soak)
variants=(bare exact sampling jemalloc-prof heaptrack)
leakwrap_variants=(exact sampling)
runs=5
build_dir=
table_file=
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
baseline_lib=
chosen_variants=
while getopts 'n:b:B:v:o:h' option; do
  case $option in
    n) runs=$OPTARG ;;
    b) build_dir=$OPTARG ;;
    B) baseline_lib=$OPTARG ;;
    v) chosen_variants=$OPTARG ;;
    o) table_file=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
if [[ -n $baseline_lib ]]; then
  [[ -f $baseline_lib ]] || { echo "compare.sh: no baseline library $baseline_lib" >&2; exit 2; }
  bench_baseline_preload=$(realpath "$baseline_lib")
  export bench_baseline_preload
  variants+=(baseline)
  leakwrap_variants+=(baseline)
fi
if [[ -n $chosen_variants ]]; then
  kept=(bare)
  for variant in $chosen_variants; do
    [[ " ${variants[*]} " == *" $variant "* ]] || { echo "compare.sh: unknown variant '$variant' (variants: ${variants[*]})" >&2; exit 2; }
    [[ $variant == bare ]] || kept+=("$variant")
  done
  variants=("${kept[@]}")
fi
if (($#)); then jobs=("$@"); else jobs=("${all_jobs[@]}"); fi
for job in "${jobs[@]}"; do
  [[ " ${all_jobs[*]} " == *" $job "* ]] || { echo "compare.sh: unknown job '$job' (jobs: ${all_jobs[*]})" >&2; exit 2; }
done

bench_find_build "$build_dir"
report=$bench_build/bin/leakwrap-report
bench_require "$bench_preload" "$report"
bench_find_jemalloc
[[ -x /usr/bin/time ]] || { echo "compare.sh: /usr/bin/time is missing: run scripts/setup.sh (package time)" >&2; exit 1; }

python=/usr/bin/python3.11
python_library=/usr/lib/python3.11
python_packages=(email xml logging asyncio json unittest http multiprocessing concurrent)
cc1plus=$(g++ -print-prog-name=cc1plus 2>/dev/null || true)
compiled_file=$bench_repo/test/bench/workloads/producer_consumer.cpp
rails_app=$bench_repo/examples/rails
siege_clients=4
# Requests per client: puma_siege 10000 in all, about 2 s bare (siege's clock counts 10 ms
# steps); rails_soak 1000, about 3 s bare.
declare -A siege_repeats=([puma_siege]=2500 [rails_soak]=250)

is_server() { [[ " ${server_jobs[*]} " == *" $1 "* ]]; }
is_leakwrap() { [[ " ${leakwrap_variants[*]} " == *" $1 "* ]]; }

work=$(mktemp -d /tmp/leakwrap-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT

# job_check JOB: sets reason to why JOB cannot run on this machine, or to nothing. Makes what the
# job needs once for all its runs (the Rails example's C extension, siege's settings).
job_check() {
  local job=$1
  reason=
  case $job in
    server_churn | producer_consumer | small_objects | thread_per_task | fork_exit)
      [[ -x $bench_build/bin/workload_$job ]] || reason="not built (target bench_tools)" ;;
    shell_loop) ;;
    rdoc | ruby_json)
      reason=$(bench_ruby_job_check "$job") ;;
    python_ast)
      [[ -x $python && -d $python_library ]] || reason="no $python or no $python_library" ;;
    cc1plus)
      [[ -x $cc1plus ]] || reason="no g++" ;;
    puma_siege | rails_boot | rails_soak)
      local tool
      for tool in ruby puma siege; do
        command -v "$tool" > /dev/null || { reason="no $tool (scripts/setup.sh)"; return; }
      done
      write_siege_home "$work/siege"
      cat > "$work/hello.ru" << 'RUBY'
run ->(env) { [200, { 'content-type' => 'text/plain' }, ["hello #{env['PATH_INFO']}\n"]] }
RUBY
      [[ $job == rails_* ]] || return 0
      if [[ ! -e $rails_app/config.ru ]]; then reason="no $rails_app"; return; fi
      if ! ruby -e 'require "action_controller/railtie"; require "redcarpet"; require "nokogiri"' 2> /dev/null; then
        reason="no Rails 6.1, redcarpet or nokogiri (scripts/setup.sh)"
        return
      fi
      # As soak.sh builds it: one cc command against the headers of the ruby on PATH.
      local header_dir arch_header_dir link_flags
      read -r header_dir arch_header_dir link_flags < <(ruby -e \
        'puts RbConfig::CONFIG.values_at("rubyhdrdir", "rubyarchhdrdir", "LIBRUBYARG_SHARED").join(" ")')
      if [[ ! -e $header_dir/ruby.h ]] || ! command -v cc > /dev/null; then
        reason="no cc or no $header_dir/ruby.h (scripts/setup.sh)"
        return
      fi
      mkdir -p "$work/rails-ext"
      # shellcheck disable=SC2086 # LIBRUBYARG_SHARED is a list of flags
      cc -shared -fPIC -g -O0 -fno-omit-frame-pointer -I"$header_dir" -I"$arch_header_dir" \
        "$rails_app/ext/table_of_contents.c" -o "$work/rails-ext/table_of_contents.so" $link_flags ||
        reason="cannot build examples/rails/ext/table_of_contents.c" ;;
  esac
}

# job_command JOB SCRATCH_DIR: sets the array job_argv to the command line of JOB and job_env to
# the environment it needs (NAME=VALUE words); its files go to SCRATCH_DIR. A server's command
# line takes more arguments (its pid file).
job_command() {
  local job=$1 scratch=$2
  job_env=()
  case $job in
    server_churn | producer_consumer | small_objects | thread_per_task)
      job_argv=("$bench_build/bin/workload_$job") ;;
    fork_exit)
      # A forked child keeps its parent's settings: with LEAKWRAP_KEEP=1 each of the 2,000 would
      # leave its segment, and /dev/shm's thousands would slow every later start's trim pass.
      job_env=(LEAKWRAP_KEEP=0)
      job_argv=("$bench_build/bin/workload_$job") ;;
    shell_loop)
      # Every command profiled as the shell is, but only the shell's segment kept for the table.
      job_argv=(/bin/sh -c 'unset LEAKWRAP_KEEP; i=0; while [ "$i" -lt 300 ]; do /bin/true; i=$((i + 1)); done; echo "$i"') ;;
    rdoc | ruby_json)
      bench_ruby_job_argv "$job" "$scratch" ;;
    python_ast)
      job_argv=("$python" -I -B "$bench_repo/test/bench/jobs/ast_census.py")
      job_argv+=("${python_packages[@]/#/$python_library/}") ;;
    cc1plus)
      job_argv=("$cc1plus" -quiet -imultiarch "$(g++ -print-multiarch)" -D_GNU_SOURCE -O1 -std=c++20
        "$compiled_file" -o "$scratch/compiled.s") ;;
    puma_siege)
      job_argv=(puma --environment production --bind tcp://127.0.0.1:0 "$work/hello.ru") ;;
    rails_boot | rails_soak)
      job_env=(RUBYLIB="$work/rails-ext")
      job_argv=(puma -C "$rails_app/config/puma.rb" --bind tcp://127.0.0.1:0 "$rails_app/config.ru") ;;
  esac
}

# variant_check VARIANT: prints why VARIANT cannot run on this machine, or nothing.
variant_check() {
  case $1 in
    heaptrack) command -v heaptrack > /dev/null || echo "skipped: not installed" ;;
    jemalloc-prof)
      if [[ -z $bench_jemalloc ]]; then
        echo "skipped: libjemalloc2 not installed"
      elif [[ -n $(env LD_PRELOAD="$bench_jemalloc" MALLOC_CONF="$bench_jemalloc_conf" /bin/true 2>&1) ]]; then
        echo "skipped: jemalloc without --enable-prof"
      fi ;;
  esac
}

load_average() { cut -d' ' -f1 /proc/loadavg; }

# job variant run status value peak_rss_kib sites segment_kib server_cpu_s
measurements=$work/measurements.tsv
: > "$measurements"
loads=("$(load_average)")

# read_segment FILE: sets sites and segment_kib from a leakwrap segment (a live process's or a
# kept one): the number of sites (leakwrap-report's totals.sites) and its resident size (du -k).
read_segment() {
  local file=$1 json
  [[ -e $file ]] || return 0
  if json=$("$report" --segment "$file" --format json --top 1 2> /dev/null); then
    sites=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["totals"]["sites"])' <<< "$json") || sites=-
  fi
  segment_kib=$(du -k "$file" | cut -f1) || segment_kib=-
}

# remove_segment PID NOT_BEFORE: removes /dev/shm/leakwrap.PID, the segment of a process this
# script started, if it is there and no older than the file NOT_BEFORE (written before the
# process started): never a segment of anybody else's process.
remove_segment() {
  local file=/dev/shm/leakwrap.$1
  if [[ -e $file && ! $file -ot $2 ]]; then rm -f "$file"; fi
}

# process_cpu_seconds PID: user + system CPU time PID has used so far, in seconds (fields 14 and
# 15 of /proc/PID/stat, after the command name, which may hold spaces).
process_cpu_seconds() {
  local stat
  stat=$(< "/proc/$1/stat") || return 1
  stat=${stat##*) }
  awk -v ticks="$(getconf CLK_TCK)" '{ printf "%.2f", ($12 + $13) / ticks }' <<< "$stat"
}

# tree_peak_rss PID: the largest VmHWM (KiB) of PID and its descendants, now.
tree_peak_rss() {
  local pid peak=0 hwm
  for pid in $(ps -e -o pid=,ppid= | awk -v root="$1" '
      { parent[$1] = $2 }
      END { for (p in parent) for (q = p; q > 1; q = parent[q]) if (q == root) { print p; break } }'); do
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2> /dev/null || true)
    ((${hwm:-0} > peak)) && peak=$hwm
  done
  echo "$peak"
}

# run_command VARIANT LIMIT SCRATCH: runs job_argv to its end under /usr/bin/time; sets status,
# value (wall s), rss, sites, segment_kib and writes SCRATCH/output. A sh that writes its pid
# and execs the rest stands first in every variant's command, so that the segment is known.
run_command() {
  local variant=$1 limit=$2 scratch=$3 exit_code=0
  (
    cd "$scratch"
    if is_leakwrap "$variant"; then export LEAKWRAP_KEEP=1; fi
    ((${#job_env[@]} == 0)) || export "${job_env[@]}"
    export LEAKWRAP_BENCH_PADDING=$run_padding
    # shellcheck disable=SC2016 # $$ and $@ are the inner sh's
    exec timeout -k 10 "$limit" /usr/bin/time -f '%e %M' -o "$scratch/time" \
      sh -c 'echo $$ > "$0" && exec "$@"' "$scratch/pid" "${bench_prefix[@]}" "${job_argv[@]}" \
      > "$scratch/stdout" 2> "$scratch/stderr"
  ) || exit_code=$?
  if [[ $variant == heaptrack ]]; then
    bench_strip_heaptrack_chatter < "$scratch/stdout" > "$scratch/output"
  else
    cp "$scratch/stdout" "$scratch/output"
  fi
  if ((exit_code == 124 || exit_code == 137)); then
    status=timeout
  elif ((exit_code != 0)); then
    status="exit-$exit_code"
  fi
  if [[ -s $scratch/time ]]; then
    read -r value rss < <(tail -n 1 "$scratch/time")
  fi
  if is_leakwrap "$variant" && [[ -s $scratch/pid ]]; then
    local pid segment
    pid=$(< "$scratch/pid")
    segment=/dev/shm/leakwrap.$pid
    if [[ $status == ok && -e $segment && ! $segment -ot $scratch/pid ]]; then
      read_segment "$segment"
    fi
    remove_segment "$pid" "$scratch/pid"
  fi
}

# run_server JOB VARIANT LIMIT SCRATCH: starts puma (job_argv) in the background, measures it
# (see the top of this file), stops it with SIGINT; sets status, value, rss, sites, segment_kib,
# cpu (puma's CPU seconds while siege ran) and writes SCRATCH/output. LIMIT bounds each wait:
# for the boot, for siege, for the stop.
run_server() {
  local job=$1 variant=$2 limit=$3 scratch=$4
  local log=$scratch/server.log pid_file=$scratch/server.pid root pid='' port started booted=''
  local fd line drain deadline=$((SECONDS + limit))
  : > "$log"
  mkfifo "$scratch/log.fifo"
  touch "$scratch/started"
  started=$EPOCHREALTIME
  (
    exec > "$scratch/log.fifo" 2>&1 < /dev/null # first: the reader below waits for it
    cd "$scratch"
    ((${#job_env[@]} == 0)) || export "${job_env[@]}"
    export LEAKWRAP_BENCH_PADDING=$run_padding
    exec "${bench_prefix[@]}" "${job_argv[@]}" --pidfile "$pid_file"
  ) &
  root=$!
  # Ready when puma says so: its output comes through a pipe, read line by line as it comes (no
  # polling that would cost CPU or add its period to the boot time), then copied on to the log.
  exec {fd}< "$scratch/log.fifo"
  while ((SECONDS < deadline)) && IFS= read -r -t $((deadline - SECONDS)) -u "$fd" line; do
    printf '%s\n' "$line" >> "$log"
    if [[ $line == *'Use Ctrl-C to stop'* ]]; then booted=$EPOCHREALTIME; break; fi
  done
  cat <&"$fd" >> "$log" &
  drain=$!
  exec {fd}<&-
  if [[ -z $booted ]]; then
    if ((SECONDS >= deadline)); then status=timeout; else status='exited-at-boot'; fi
  fi
  [[ -s $pid_file ]] && pid=$(< "$pid_file")
  port=$(grep -Eo -m 1 'Listening on http://127\.0\.0\.1:[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)
  if [[ $status == ok && ( -z $pid || -z $port ) ]]; then status='no-pid-or-port'; fi

  if [[ $status == ok && $job == rails_boot ]]; then
    value=$(awk -v a="$started" -v b="$booted" 'BEGIN { printf "%.3f", b - a }')
    rss=$(tree_peak_rss "$root")
    if is_leakwrap "$variant"; then read_segment "/dev/shm/leakwrap.$pid"; fi
    # The page, after the measurement: the app must work in every variant.
    timeout -k 5 "$limit" ruby -rnet/http -e 'print Net::HTTP.get(URI(ARGV[0]))' \
      "http://127.0.0.1:$port/" > "$scratch/output" 2>> "$scratch/stderr" || status='request-failed'
  elif [[ $status == ok ]]; then  # puma_siege, rails_soak
    local requests=$((siege_clients * siege_repeats[$job])) cpu_before
    cpu_before=$(process_cpu_seconds "$pid") || cpu_before=
    HOME=$work/siege timeout -k 10 "$limit" siege -b -c "$siege_clients" -r "${siege_repeats[$job]}" \
      "http://127.0.0.1:$port/" < /dev/null > "$scratch/siege" 2>&1 || status='siege-failed'
    grep -E '^(Successful|Failed) transactions:' "$scratch/siege" | tr -s ' \t' ' ' > "$scratch/output" || true
    if [[ $status == ok ]]; then
      value=$(awk '/^Transaction rate:/ { print $3 }' "$scratch/siege")
      [[ -n $value ]] || { value=- status='no-rate'; }
      [[ $(< "$scratch/output") == "Successful transactions: $requests"*"Failed transactions: 0" ]] ||
        status='requests-failed'
      local cpu_after
      if [[ -n $cpu_before ]] && cpu_after=$(process_cpu_seconds "$pid"); then
        cpu=$(awk -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { printf "%.2f", b - a }')
      fi
    fi
    rss=$(tree_peak_rss "$root")
    if [[ $status == ok ]] && is_leakwrap "$variant"; then read_segment "/dev/shm/leakwrap.$pid"; fi
  fi

  # Stop: SIGINT to puma (heaptrack then writes its data), SIGKILL if it is still there after
  # LIMIT seconds.
  if [[ -n $pid ]]; then kill -INT "$pid" 2> /dev/null || true; else kill -INT "$root" 2> /dev/null || true; fi
  deadline=$((SECONDS + limit))
  while kill -0 "$root" 2> /dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  if kill -0 "$root" 2> /dev/null; then
    [[ $status != ok ]] || status='timeout-at-stop'
    [[ -z $pid ]] || kill -KILL "$pid" 2> /dev/null || true
    kill -KILL "$root" 2> /dev/null || true
  fi
  local exit_code=0
  wait "$root" || exit_code=$?
  if [[ $status == ok ]] && ((exit_code != 0)); then status="exit-$exit_code"; fi
  # The rest of the log ends when the last writer is gone (heaptrack's interpreter may be last).
  for _ in {1..100}; do kill -0 "$drain" 2> /dev/null || break; sleep 0.1; done
  kill "$drain" 2> /dev/null || true
  wait "$drain" 2> /dev/null || true
  cat "$log" >> "$scratch/stderr"
  [[ ! -e $scratch/siege ]] || tail -n 14 "$scratch/siege" >> "$scratch/stderr"
  # A clean exit removes the segment; after a SIGKILL it stays. Without heaptrack puma is $root
  # (the subshell execs it), also when it died before writing its pid file.
  remove_segment "$root" "$scratch/started"
  [[ -z $pid || $pid == "$root" ]] || remove_segment "$pid" "$scratch/started"
}

# measure JOB VARIANT RUN TIME_LIMIT: one run; appends its line to $measurements and sets
# run_seconds to how long it took.
measure() {
  local job=$1 variant=$2 run=$3 limit=$4
  local scratch=$work/run run_started=$EPOCHREALTIME
  rm -rf "$scratch" && mkdir "$scratch"
  : > "$scratch/stderr"
  job_command "$job" "$scratch"
  bench_variant_prefix "$variant" "$scratch"
  run_padding=$(bench_padding $((run - 1)))
  status=ok value=- rss=- sites=- segment_kib=- cpu=-
  if is_server "$job"; then
    run_server "$job" "$variant" "$limit" "$scratch"
  else
    run_command "$variant" "$limit" "$scratch"
  fi
  if [[ $status == ok && $variant == bare && ! -e $work/$job.expected ]]; then
    cp "$scratch/output" "$work/$job.expected"
  elif [[ $status == ok ]] && ! cmp -s "$scratch/output" "$work/$job.expected"; then
    status='wrong-output'
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$job" "$variant" "$run" "$status" "$value" "$rss" \
    "$sites" "$segment_kib" "$cpu" >> "$measurements"
  local unit=req/s
  [[ $job == puma_siege || $job == rails_soak ]] || unit=s
  printf '  %-18s run %d/%d  %-13s  %8s %-5s  %8s KiB  %7s sites  %7s KiB segment  %s\n' "$job" "$run" \
    "$runs" "$variant" "$value" "$unit" "$rss" "$sites" "$segment_kib" "$status" >&2
  if [[ $status != ok ]]; then
    if is_server "$job"; then
      echo "    puma's log (and siege's summary) of that run, last lines but backtraces:" >&2
      grep -v $'^\tfrom ' "$scratch/stderr" | tail -n 8 | sed 's/^/      /' >&2
    else
      echo "    stderr of that run, first lines:" >&2
      head -n 5 "$scratch/stderr" | sed 's/^/      /' >&2
    fi
  fi
  rm -rf "$scratch"
  run_seconds=$(awk -v a="$run_started" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
}

declare -A variant_skipped
for variant in "${variants[@]}"; do
  variant_skipped[$variant]=$(variant_check "$variant")
done

started=$(date -u +%s)
for job in "${jobs[@]}"; do
  job_check "$job"
  if [[ -n $reason ]]; then
    printf '%s\t%s\t-\tskipped: %s\t-\t-\t-\t-\t-\n' "$job" bare "$reason" >> "$measurements"
    echo "  $job skipped: $reason" >&2
    continue
  fi
  limit=600
  for ((run = 1; run <= runs; run++)); do
    # Rotate the order every run, starting with bare, so that no variant always follows another.
    for ((i = 0; i < ${#variants[@]}; i++)); do
      variant=${variants[(i + run - 1) % ${#variants[@]}]}
      if [[ -n ${variant_skipped[$variant]} ]]; then
        ((run > 1)) || printf '%s\t%s\t-\t%s\t-\t-\t-\t-\t-\n' "$job" "$variant" "${variant_skipped[$variant]}" >> "$measurements"
        continue
      fi
      measure "$job" "$variant" "$run" "$limit"
      if [[ $variant == bare && $run == 1 ]]; then
        # Any variant that takes 50 times longer than bare's whole run (and over a minute) counts
        # as hung.
        limit=$(awk -v seconds="$run_seconds" 'BEGIN { l = int(seconds * 50) + 1; print (l < 60 ? 60 : l) }')
      fi
    done
  done
  loads+=("$(load_average)")
done
elapsed=$(($(date -u +%s) - started))

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
python3 - "$measurements" "$runs" "$elapsed" "$(nproc)" "$cpu_model" "${loads[*]}" \
  "test/bench/compare.sh -n $runs${build_dir:+ -b $build_dir}${baseline_lib:+ -B $baseline_lib}${chosen_variants:+ -v \"$chosen_variants\"}${table_file:+ -o $table_file} $*" \
  "$siege_clients" "${siege_repeats[puma_siege]}" "${siege_repeats[rails_soak]}" "${variants[@]}" <<'PY' | tee "${table_file:-/dev/null}"
import statistics
import sys
from collections import defaultdict

(measurements_file, runs, elapsed, cpus, cpu_model, loads, command, clients,
 repeats, rails_repeats), variants = sys.argv[1:11], sys.argv[11:]
requests = int(clients) * int(repeats)
rails_requests = int(clients) * int(rails_repeats)
THREADS = {"server_churn": "2", "producer_consumer": "2", "thread_per_task": "4", "puma_siege": "0–5", "rails_boot": "0–5",
           "rails_soak": "0–5"}
# What a job's speed is measured in. A rate's ratio is bare's over the variant's: as for times,
# above 1 is slower.
MEASURE = {"puma_siege": "req/s", "rails_boot": "boot s", "rails_soak": "req/s"}
RATES = {"req/s"}
WHAT = {
    "server_churn": "larson-style: threads replace random 16-512 B blocks in a shared array",
    "producer_consumer": "xmalloc-style: one thread allocates 8-1024 B blocks, another frees them",
    "small_objects": "cfrac/espresso-style: linked bignums and trees of 16-64 B objects",
    "thread_per_task": "5000 rounds of 4 threads started and joined, each handling one small request",
    "fork_exit": "2000 children forked one after another from a process holding 4000 blocks of 200 sites, "
                 "each exiting at once",
    "shell_loop": "dash running `/bin/true` 300 times: a fork, an exec and a process start each",
    "rdoc": "`rdoc --format=ri` over Ruby 3.1's irb library",
    "ruby_json": "Ruby 3.1: 3000 order-like hashes through 8 `JSON.generate`/`JSON.parse` round "
                 "trips (test/bench/jobs/json_round_trips.rb)",
    "python_ast": "Python 3.11: `ast.parse` of 9 stdlib packages, node counts as JSON",
    "cc1plus": "g++ 12 compiler proper, `-O1` on test/bench/workloads/producer_consumer.cpp",
    "puma_siege": f"puma (single mode, default threads) serving a one-line Rack app on 127.0.0.1; "
                  f"`siege -b -c {clients} -r {repeats}` ({requests} requests, a connection each); "
                  f"RSS is puma's peak after them",
    "rails_boot": "puma booting the Rails 6.1 app of examples/rails until it logs "
                  "\"Use Ctrl-C to stop\"; RSS is the peak at that moment",
    "rails_soak": f"the same Rails app once booted, rendering markdown and parsing HTML per request "
                  f"(and leaking its C memory: RSS grows with requests); `siege -b -c {clients} "
                  f"-r {rails_repeats}` ({rails_requests} requests); RSS is the steady one after them",
}

# (job, variant) -> [(status, value, rss_kib, sites, segment_kib, server_cpu_s)]
runs_by = defaultdict(list)
jobs = []
for line in open(measurements_file):
    job, variant, _run, status, value, rss, sites, segment, cpu = line.rstrip("\n").split("\t")
    if job not in jobs:
        jobs.append(job)
    runs_by[job, variant].append((status, value, rss, sites, segment, cpu))

def good(job, variant):
    return [r for r in runs_by[job, variant] if r[0] == "ok"]

def medians(job, variant):
    ok = good(job, variant)
    if not ok:
        return None
    return statistics.median(float(r[1]) for r in ok), statistics.median(int(r[2]) for r in ok)

def recorded(job, variant):
    """Median sites and segment KiB of the good runs that read a segment, or None."""
    read = [r for r in good(job, variant) if r[3] != "-" and r[4] != "-"]
    if not read:
        return None
    return statistics.median(int(r[3]) for r in read), statistics.median(int(r[4]) for r in read)

def server_cpu(job, variant):
    """Median CPU seconds of the server while siege ran, over the good runs that measured it."""
    measured = [float(r[5]) for r in good(job, variant) if r[5] != "-"]
    return statistics.median(measured) if measured else None

def failures(job, variant):
    bad = [r[0] for r in runs_by[job, variant] if r[0] != "ok"]
    if not bad:
        return ""
    if bad[0].startswith("skipped"):
        return bad[0]
    kinds = ", ".join(sorted(set(bad)))
    return f"failed {len(bad)}/{len(runs_by[job, variant])} ({kinds})"

others = variants[1:]
header = ["job", "threads", "measure", "bare", "bare peak RSS MiB"]
for variant in others:
    header += [f"{variant} time", f"{variant} RSS"]
print("| " + " | ".join(header) + " |")
print("|" + "---|" * len(header))
for job in jobs:
    measure = MEASURE.get(job, "wall s")
    bare = medians(job, "bare")
    row = [job, THREADS.get(job, "1"), measure]
    if bare is None:
        row += [failures(job, "bare") or "failed", ""] + [""] * (2 * len(others))
    else:
        bare_value, bare_rss = bare
        row += [f"{bare_value:.0f}" if measure in RATES else f"{bare_value:.2f}", f"{bare_rss / 1024:.1f}"]
        for variant in others:
            result, failed = medians(job, variant), failures(job, variant)
            if result is None:
                row += [failed or "failed", ""]
                continue
            mark = f" ({failed})" if failed else ""
            slower = bare_value / result[0] if measure in RATES else result[0] / bare_value
            row += [f"{slower:.2f}×{mark}", f"{result[1] / bare_rss:.2f}×"]
    print("| " + " | ".join(row) + " |")
print()
print("Ratios are medians of each variant over bare's median (for req/s bare's rate over the")
print("variant's, so that above 1 is slower everywhere); exact is `LD_PRELOAD=libleakwrap.so`,")
print("sampling adds `LEAKWRAP_SAMPLE=524288`, jemalloc-prof is Debian's libjemalloc2 preloaded with")
print("`MALLOC_CONF=prof:true,lg_prof_sample:19` (a different allocator as well as a sampling")
print("profiler), heaptrack is `heaptrack -o DIR prog` (its wall time includes writing its compressed")
print("data; its RSS is the larger of the program and heaptrack_interpret, as /usr/bin/time's %M and")
print("the servers' VmHWM of the whole process tree report the largest process).")
if "baseline" in variants:
    print("baseline is exact mode with the library given by -B (an earlier commit's), in the same run.")
print()
for job in jobs:
    if job in WHAT:
        print(f"- `{job}`: {WHAT[job]}")

cpu_jobs = [job for job in jobs if server_cpu(job, "bare")]
if cpu_jobs:
    print()
    header = ["job", "bare CPU s"] + [f"{variant} CPU" for variant in others]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for job in cpu_jobs:
        bare_cpu = server_cpu(job, "bare")
        row = [job, f"{bare_cpu:.2f}"]
        for variant in others:
            cpu = server_cpu(job, variant)
            row.append(f"{cpu / bare_cpu:.2f}×" if cpu is not None else "")
        print("| " + " | ".join(row) + " |")
    print()
    print("The servers' cost by the work done rather than by a rate that siege shares two CPUs to")
    print("make: the user + system CPU time puma itself used while siege ran (/proc/PID/stat), the")
    print("median of bare and each variant's median over it. heaptrack's own interpreter process is")
    print("not in it.")

recording = [v for v in others if any(recorded(job, v) for job in jobs)]
if recording:
    print()
    header = ["job"]
    for variant in recording:
        header += [f"{variant} sites", f"{variant} segment MiB"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for job in jobs:
        row = [job]
        for variant in recording:
            result = recorded(job, variant)
            row += [f"{result[0]:.0f}", f"{result[1] / 1024:.1f}"] if result else ["", ""]
        print("| " + " | ".join(row) + " |")
    print()
    print("What leakwrap recorded, medians over the good runs: sites is `totals.sites` of")
    print("`leakwrap-report --format json`, the segment's size is its resident size (`du -k` of")
    print("/dev/shm/leakwrap.<pid>), read from the segment kept at exit (`LEAKWRAP_KEEP=1`) or, for the")
    print("servers, from the live one just before puma is stopped.")
print()
load_values = [float(x) for x in loads.split()]
print(f"Machine: {cpus} CPUs, {cpu_model}. {runs} runs per variant, alternating, in "
      f"{int(elapsed) // 60} min {int(elapsed) % 60} s. Load average (1 min) at the start "
      f"{load_values[0]:.2f}, after each job {', '.join(f'{x:.2f}' for x in load_values[1:])}.")
print(f"Command: `{command.strip()}`")
PY
