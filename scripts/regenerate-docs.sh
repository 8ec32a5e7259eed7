#!/usr/bin/env bash
# Regenerates every output shown in README.md, docs/*.md and examples/*/README.md by running the
# documented command on the real programs, so that what the documentation shows is what the code
# prints. A generated block is the fenced block after a line <!-- output: RECIPE -->, where
# RECIPE is one of the functions below; scripts/lib/doc_blocks.py finds and rewrites the blocks.
#
#   scripts/regenerate-docs.sh [RECIPE...]              rewrite the blocks (all, or these recipes')
#   scripts/regenerate-docs.sh --check [RECIPE...]      fail when a block no longer matches, numbers
#                                                       aside (what the test documented_outputs runs)
#   --skip-slow                                         leave out the recipes that take minutes
#                                                       (puma and Rails under siege)
#
# Needs a build of everything (scripts/build.sh) in build/ or $LEAKWRAP_BUILD_DIR, and for the Ruby
# recipes ruby, puma, siege and Rails (scripts/setup.sh). Source paths in the output are shown
# relative to the checkout, as /…/examples/...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath "${LEAKWRAP_BUILD_DIR:-build}")
source scripts/lib/profiled.sh

report() { "$build/bin/leakwrap-report" "$@"; }
slow_recipes=(puma_single puma_cluster rails_soak)

# Runs CMD under the preload until it is ready, then `leakwrap-report PID REPORT_ARGS...`; prints
# the report. With --after-a-reading, the report waits 2 s more: the allocator's count is read at
# most once a second by a thread that allocates, so that the count shown follows the ready line.
# run_and_report [--after-a-reading] [ENV=VALUE...] CMD ARGS... -- REPORT_ARGS...
run_and_report() {
  local command=() output settle=0
  if [[ $1 == --after-a-reading ]]; then settle=2; shift; fi
  while [[ $1 != -- ]]; do command+=("$1"); shift; done
  shift
  output=$(mktemp)
  start_profiled "$output" "${command[@]}"
  sleep "$settle"
  report "$profiled_pid" "$@"
  stop_profiled
  rm -f "$output"
}

# The lines of a report's memory explanation, without the rows below them.
memory_lines() { sed -n '/^memory:/,/^$/p' | sed '/^$/d'; }

# README.md: the first screen.
fiddle_report() { run_and_report ruby examples/ruby/fiddle_leak.rb -- --top 1; }

# examples/*/README.md
leaky_cache() { run_and_report "$build/bin/leaky_cache" 1000 -- --top 5; }
leaky_sessions() { run_and_report "$build/bin/leaky_sessions" 400 -- --top 5; }
fiddle_by_ruby() { run_and_report ruby examples/ruby/fiddle_leak.rb -- --by ruby --top 3; }
fiddle_native() { run_and_report ruby examples/ruby/fiddle_leak.rb -- --top 3; }
puma_single() { examples/puma/soak.sh single; }
puma_cluster() { examples/puma/soak.sh cluster; }
rails_soak() { examples/rails/soak.sh; }

# docs/using.md: inlined functions, each a frame of its own (the leak's rows of inline_leak).
inline_frames() {
  run_and_report "$build/test/programs/inline_leak" -- --focus make_buffer --hide-runtime |
    sed -n '/^#1 /,$p'
}

# docs/why-rss-grows.md: 8 threads churn strings and keep every 64th.
fragmented_arenas() { run_and_report --after-a-reading "$build/test/programs/fragmented_arenas" -- --top 1; }
fragmented_arenas_arena_max_2() {
  run_and_report --after-a-reading MALLOC_ARENA_MAX=2 "$build/test/programs/fragmented_arenas" -- --top 1 | memory_lines
}
fragmented_arenas_leak() {
  run_and_report --after-a-reading "$build/test/programs/fragmented_arenas" leak -- --top 1 | memory_lines
}
# 20 MB at start-up, then a leak from 2.6 s on: a one-shot report, and the memory born after 2 s.
startup_then_leak_rows() {
  run_and_report "$build/test/programs/startup_then_leak" -- --top 2 --hide-runtime | sed -n '/^births:/,$p'
}
startup_then_leak_born_after() {
  run_and_report "$build/test/programs/startup_then_leak" -- --top 1 --hide-runtime --born-after 2s |
    sed -n '/^births:/,$p'
}

# docs/watching.md: a recorded series of test/programs/steady_leak.
suspects_steady_leak() { report suspects test/timeseries/series/steady-leak.jsonl; }

# docs/integrations.md: top in a terminal (tmux) on the profiled program, 5 seconds after `g`
# (ranked by growth since the view started). top_screen ROWS [TOP OPTION...] [-- SIGNAL]: a
# terminal with room for ROWS rows (those whose order is settled); the signal is sent to the
# program right after `g`.
top_screen() {
  local lines=$((6 + $1)) options=() signal= session=leakwrap-docs-$$
  shift
  while (($#)); do
    if [[ $1 == -- ]]; then signal=$2; break; fi
    options+=("$1"); shift
  done
  tmux new-session -d -s "$session" -x 150 -y "$lines" \
    "$build/bin/leakwrap-report top $profiled_pid --interval 1s ${options[*]}; sleep 60"
  sleep 1
  tmux send-keys -t "$session" g
  [[ -z $signal ]] || kill "-$signal" "$profiled_pid"
  sleep 4
  tmux capture-pane -p -t "$session" | sed -e 's/[[:space:]]*$//' -e '/^$/d'
  tmux kill-session -t "$session"
}
top_steady_leak() {
  local output
  output=$(mktemp)
  start_profiled "$output" "$build/test/programs/steady_leak" 50
  top_screen 4 -- USR1
  stop_profiled
  rm -f "$output"
}
# leak_in_batches.rb leaks 3 blocks at its line 13, and 5 more from another caller on SIGUSR1.
top_ruby_lines() {
  local output
  output=$(mktemp)
  cd test/ruby/programs
  start_profiled "$output" ruby leak_in_batches.rb 102400 3 5
  top_screen 3 --by ruby -- USR1
  stop_profiled
  cd "$root"
  rm -f "$output"
}

check=false skip_slow=false wanted=()
for arg; do
  case $arg in
    --check) check=true ;;
    --skip-slow) skip_slow=true ;;
    -*) echo "usage: $0 [--check] [--skip-slow] [RECIPE...]" >&2; exit 2 ;;
    *) wanted+=("$arg") ;;
  esac
done

files=(README.md docs/*.md examples/*/README.md)
outputs=$(mktemp -d)
trap 'stop_profiled; rm -rf "$outputs"' EXIT
mapfile -t recipes < <(python3 scripts/lib/doc_blocks.py recipes "${files[@]}")
((${#wanted[@]} > 0)) && recipes=("${wanted[@]}")
for recipe in "${recipes[@]}"; do
  declare -F "$recipe" > /dev/null || { echo "no recipe $recipe in $0" >&2; exit 2; }
  if $skip_slow && [[ " ${slow_recipes[*]} " == *" $recipe "* ]]; then continue; fi
  echo "running $recipe" >&2
  # Paths of this checkout say nothing to a reader and differ from one checkout to another.
  "$recipe" | sed "s|$root/|/…/|g" > "$outputs/$recipe.txt"
done
if $check; then
  python3 scripts/lib/doc_blocks.py check "$outputs" "${files[@]}"
else
  python3 scripts/lib/doc_blocks.py update "$outputs" "${files[@]}"
fi
