# shellcheck shell=bash
# Shared by run_bench.sh and compare.sh (sourced, not run): where the build is, and how to run a
# command bare, under leakwrap in exact or sampling mode, under jemalloc's heap profiler, or under
# heaptrack.

bench_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# The sampling period of the "sampling" variant, in bytes (README, LEAKWRAP_SAMPLE).
bench_sample_bytes=524288

# The jemalloc-prof variant: Debian's libjemalloc2 preloaded, its heap profiler sampling on
# average one allocation per 2^19 = 524288 bytes, the period of the sampling variant. Without
# prof_final or lg_prof_interval it writes no profile file: what it costs is sampling and keeping
# the sampled stacks, as leakwrap's sampling mode does.
bench_jemalloc_conf=prof:true,lg_prof_sample:19

# bench_padding N: the value of LEAKWRAP_BENCH_PADDING for the N-th run (from 0), 40 x N bytes.
# The environment lies at the top of the stack, so its size moves everything below it. Ruby's GC
# marks the machine stack conservatively, and for one command line and environment it takes the
# same course run after run (when major GCs come, how many heap pages it keeps); a different
# padding per run samples its courses, so that a median does not repeat one of them
# (test/bench/ruby_gc_sensitivity.sh shows the effect).
bench_padding() {
  printf "%$((40 * $1))s" "" | tr ' ' x
}

# The input of the rdoc job: Ruby 3.1's irb library.
bench_rdoc_input=/usr/lib/ruby/3.1.0/irb

# bench_ruby_job_argv JOB SCRATCH_DIR: sets the array job_argv to the command line of the Ruby
# job JOB, rdoc or ruby_json, as compare.sh and ruby_gc_sensitivity.sh run it; rdoc writes into
# SCRATCH_DIR/ri. bench_ruby_job_check JOB prints why JOB cannot run here, or nothing.
# shellcheck disable=SC2034 # job_argv is for the caller
bench_ruby_job_argv() {
  case $1 in
    rdoc) job_argv=(rdoc --quiet --format=ri --output="$2/ri" "$bench_rdoc_input") ;;
    ruby_json) job_argv=(ruby "$bench_repo/test/bench/jobs/json_round_trips.rb") ;;
  esac
}
bench_ruby_job_check() {
  case $1 in
    rdoc)
      if ! command -v rdoc > /dev/null || [[ ! -d $bench_rdoc_input ]]; then echo "no rdoc or no $bench_rdoc_input"; fi ;;
    ruby_json)
      ruby -rjson -e '' 2> /dev/null || echo "no ruby with json" ;;
  esac
}

# bench_find_build [DIR]: sets bench_build and bench_preload. DIR, else $LEAKWRAP_BUILD_DIR, else
# build/ in the repository. Refuses a build that checks the preload's invariants at run time
# (LEAKWRAP_DEBUG=ON, as scripts/test.sh configures): that is not what users run.
bench_find_build() {
  bench_build=$(realpath -m "${1:-${LEAKWRAP_BUILD_DIR:-$bench_repo/build}}")
  bench_preload=$bench_build/lib/libleakwrap.so
  if grep -q '^LEAKWRAP_DEBUG:BOOL=ON' "$bench_build/CMakeCache.txt" 2>/dev/null; then
    echo "$bench_build checks invariants at run time (LEAKWRAP_DEBUG=ON): benchmark a build" \
      "configured with -DLEAKWRAP_DEBUG=OFF, e.g. cmake -S . -B build-bench -DLEAKWRAP_DEBUG=OFF" >&2
    exit 2
  fi
}

# bench_find_jemalloc: sets bench_jemalloc to libjemalloc.so.2 of Debian's package libjemalloc2,
# or to nothing if it is not installed.
bench_find_jemalloc() {
  bench_jemalloc=$(dpkg -L libjemalloc2 2>/dev/null | grep -m 1 '/libjemalloc\.so\.2$' || true)
  [[ -n $bench_jemalloc && -e $bench_jemalloc ]] || bench_jemalloc=
}

# bench_require FILE...: every file must exist, else one line saying how to build and exit 1.
bench_require() {
  local file
  for file in "$@"; do
    if [[ ! -e $file ]]; then
      echo "missing $file: build it first, e.g." \
        "cmake -S $bench_repo -B $bench_build && cmake --build $bench_build --target bench_tools" >&2
      exit 1
    fi
  done
}

# bench_variant_prefix VARIANT SCRATCH_DIR: sets the array bench_prefix to the words that run a
# command as VARIANT (bare, exact, sampling, jemalloc-prof, heaptrack, or baseline: exact mode
# with the library $bench_baseline_preload): "${bench_prefix[@]}" program args... heaptrack
# writes its data file into SCRATCH_DIR (the caller deletes it). jemalloc-prof needs
# bench_find_jemalloc first.
# shellcheck disable=SC2034 # bench_prefix is for the caller
bench_variant_prefix() {
  local variant=$1 scratch=$2
  case $variant in
    bare) bench_prefix=(env -u LD_PRELOAD -u LEAKWRAP_SAMPLE) ;;
    exact) bench_prefix=(env LD_PRELOAD="$bench_preload" LEAKWRAP_SAMPLE=0) ;;
    baseline) bench_prefix=(env LD_PRELOAD="$bench_baseline_preload" LEAKWRAP_SAMPLE=0) ;;
    sampling) bench_prefix=(env LD_PRELOAD="$bench_preload" LEAKWRAP_SAMPLE="$bench_sample_bytes") ;;
    jemalloc-prof) bench_prefix=(env -u LEAKWRAP_SAMPLE LD_PRELOAD="$bench_jemalloc" MALLOC_CONF="$bench_jemalloc_conf") ;;
    heaptrack) bench_prefix=(env -u LD_PRELOAD -u LEAKWRAP_SAMPLE heaptrack -o "$scratch/heaptrack") ;;
    *) echo "bench_variant_prefix: unknown variant $variant" >&2; return 2 ;;
  esac
}

# bench_strip_heaptrack_chatter < heaptrack's stdout: the program's own stdout. heaptrack prints
# its messages on stdout too: everything up to "starting application..." and from
# "Heaptrack finished!" on.
bench_strip_heaptrack_chatter() {
  sed -e '1,/^starting application, this might take some time\.\.\.$/d' -e '/^Heaptrack finished!/,$d'
}
