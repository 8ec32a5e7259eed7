#!/usr/bin/env bash
# A soak test for CI: runs a program under leakwrap, samples it with `leakwrap-report watch` while
# it works (optionally while a load command drives it), then lets `leakwrap-report suspects
# --fail-on` decide, and exits with its status.
#
# Usage: examples/ci/soak_gate.sh [-d DURATION] [-i INTERVAL] [-w SECONDS] [-l LOAD] [-f CHECKS]
#                                 [-g SIZE] [-o SERIES] -- COMMAND [ARGS...]
#   -d DURATION  how long to watch at most (default 60s); the program is stopped after it
#   -w SECONDS   how long the program runs before the first sample, so that its start (loading
#                code, filling caches), which keeps what it allocates, is not taken for a leak
#                (sleep's syntax: 5, 0.5, 1m; default 0)
#   -i INTERVAL  time between samples (default 1s)
#   -l LOAD      a shell command started after the first sample (siege, a test client); the soak
#                ends when it does (default: none, the soak lasts DURATION or until COMMAND exits)
#   -f CHECKS    what fails the gate, --fail-on of suspects: leak, growth, rss (default leak)
#   -g SIZE      --max-growth for the growth check (default 1MiB)
#   -o SERIES    keep the series here, for plot or a CI artifact (default: a temporary file)
# Exit status: 0 the gate passed, 3 it found what CHECKS names (the findings on stderr, the
# suspects table on stdout), 1 anything else went wrong.
#
# Uses <repo>/build (or $LEAKWRAP_BUILD_DIR): lib/libleakwrap.so and bin/leakwrap-report; set
# LEAKWRAP_PRELOAD and LEAKWRAP_REPORT to use installed ones instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${LEAKWRAP_BUILD_DIR:-$here/../../build}
preload=${LEAKWRAP_PRELOAD:-$build/lib/libleakwrap.so}
report=${LEAKWRAP_REPORT:-$build/bin/leakwrap-report}
duration=60s interval=1s warmup=0 load='' checks=leak max_growth=1MiB series=''

die() { echo "soak_gate: $*" >&2; exit 1; }

while getopts 'd:i:w:l:f:g:o:' option; do
  case $option in
    d) duration=$OPTARG ;;
    i) interval=$OPTARG ;;
    w) warmup=$OPTARG ;;
    l) load=$OPTARG ;;
    f) checks=$OPTARG ;;
    g) max_growth=$OPTARG ;;
    o) series=$OPTARG ;;
    *) die "usage: $0 [-d DURATION] [-i INTERVAL] [-w SECONDS] [-l LOAD] [-f CHECKS] [-g SIZE] [-o SERIES] -- COMMAND [ARGS...]" ;;
  esac
done
shift $((OPTIND - 1))
(($# > 0)) || die "no COMMAND to soak (put it after --)"
[[ $warmup =~ ^[0-9]+(\.[0-9]+)?[smhd]?$ ]] || die "-w $warmup is no time sleep understands (5, 0.5, 1m)"
[[ -f $preload ]] || die "$preload is missing: build first, or set LEAKWRAP_PRELOAD"
[[ -x $report ]] || die "$report is missing: build first, or set LEAKWRAP_REPORT"

work=$(mktemp -d)
[[ -n $series ]] || series=$work/series.jsonl
program_pid='' watch_pid=''

# The program is stopped with SIGTERM; one that dies by it leaves its segment behind like any
# killed process, and that one segment, ours, is removed.
stop_program() {
  [[ -n $program_pid ]] || return 0
  if kill -0 "$program_pid" 2>/dev/null; then
    kill -TERM "$program_pid"
    for _ in $(seq 100); do kill -0 "$program_pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$program_pid" 2>/dev/null && kill -KILL "$program_pid"
  fi
  wait "$program_pid" 2>/dev/null || true
  rm -f "/dev/shm/leakwrap.$program_pid"
  program_pid=''
}
cleanup() {
  [[ -n $watch_pid ]] && kill -TERM "$watch_pid" 2>/dev/null
  stop_program
  rm -rf "$work"
}
trap cleanup EXIT

LD_PRELOAD=$preload "$@" &
program_pid=$!
for _ in $(seq 100); do
  [[ -e /dev/shm/leakwrap.$program_pid ]] && break
  kill -0 "$program_pid" 2>/dev/null || die "$1 exited before leakwrap could watch it"
  sleep 0.1
done
sleep "$warmup"
kill -0 "$program_pid" 2>/dev/null || die "$1 exited during the warm-up"

"$report" watch "$program_pid" --interval "$interval" --duration "$duration" --out "$series" \
  >"$work/watch.log" 2>&1 &
watch_pid=$!
until grep -q 'sample 1:' "$work/watch.log"; do
  kill -0 "$watch_pid" 2>/dev/null || { cat "$work/watch.log" >&2; die "watch failed"; }
  sleep 0.1
done
if [[ -n $load ]]; then
  bash -c "$load" || die "the load command failed: $load"
  kill -TERM "$watch_pid" 2>/dev/null || true
fi
wait "$watch_pid" || { cat "$work/watch.log" >&2; die "watch failed"; }
watch_pid=''
tail -n 1 "$work/watch.log"
stop_program

status=0
"$report" suspects "$series" --fail-on "$checks" --max-growth "$max_growth" || status=$?
exit "$status"
