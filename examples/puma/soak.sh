#!/usr/bin/env bash
# Soaks the leaking Rack app (config.ru) in puma under leakwrap and reports each worker live.
#
# Usage: examples/puma/soak.sh [single|cluster] [REQUESTS]
#   single (default): one puma process; cluster: a master and two workers (puma -w 2).
#   REQUESTS (default 20000, a multiple of 4): siege sends exactly that many, from 4 clients.
# The build directory (default <repo>/build, or $BUILD_DIR) must hold lib/libleakwrap.so,
# bin/leakwrap-report and ruby/markdown_renderer.so. Puma listens on a loopback port that the
# kernel picks (so two soaks never collide), and is stopped with SIGINT (a clean exit, which removes its segments) when the script ends.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${BUILD_DIR:-$here/../../build}" && pwd)
mode=${1:-single}
requests=${2:-20000}
clients=4

die() { echo "soak: $*" >&2; exit 1; }

case $mode in
  single) workers=0 ;;
  cluster) workers=2 ;;
  *) die "usage: $0 [single|cluster] [REQUESTS]" ;;
esac
[[ $requests =~ ^[0-9]+$ ]] && ((requests > 0 && requests % clients == 0)) ||
  die "REQUESTS must be a positive multiple of $clients (siege -c $clients -r REQUESTS/$clients)"
for file in lib/libleakwrap.so bin/leakwrap-report ruby/markdown_renderer.so; do
  [[ -e $build/$file ]] || die "$build/$file is missing: build first (cmake --build $build)"
done
report() { "$build/bin/leakwrap-report" "$@"; }

work=$(mktemp -d)
puma_pid=
# shellcheck source=../puma_server.sh
source "$here/../puma_server.sh"
trap 'stop_puma; rm -rf "$work"' EXIT

cluster_options=()
((workers > 0)) && cluster_options=(--workers "$workers")
echo "soak: puma in $mode mode, under $build/lib/libleakwrap.so"
LD_PRELOAD=$build/lib/libleakwrap.so RUBYLIB=$build/ruby \
  puma -C "$here/puma.rb" "${cluster_options[@]}" --bind tcp://127.0.0.1:0 "$here/config.ru" \
  >"$work/puma.log" 2>&1 &
puma_pid=$!

# Ready when puma says so and, in cluster mode, every worker has booted. Waiting on the log, not
# on a probe request, keeps the request count exact.
booted_workers() { grep -Eo 'Worker [0-9]+ \(PID: [0-9]+\) booted' "$work/puma.log" | grep -Eo '[0-9]+\)' | tr -d ')' || true; }
for _ in $(seq 300); do
  kill -0 "$puma_pid" 2>/dev/null || { cat "$work/puma.log" >&2; die "puma exited while starting"; }
  if grep -q 'Use Ctrl-C to stop' "$work/puma.log" && (($(booted_workers | wc -l) == workers)); then break; fi
  sleep 0.1
done
grep -q 'Use Ctrl-C to stop' "$work/puma.log" || { cat "$work/puma.log" >&2; die "puma did not start in 30 s"; }
if ((workers > 0)); then mapfile -t worker_pids < <(booted_workers); else worker_pids=("$puma_pid"); fi
port=$(grep -Eo 'Listening on http://127\.0\.0\.1:[0-9]+' "$work/puma.log" | grep -Eo '[0-9]+$')

write_siege_home "$work"
echo "soak: siege -c $clients -r $((requests / clients)): $requests requests"
HOME=$work siege -c "$clients" -r "$((requests / clients))" "http://127.0.0.1:$port/" </dev/null
sleep 0.5 # let the out-of-band GC of puma.rb run after the last request

if ((workers > 0)); then
  echo
  echo "== leakwrap-report --list (the master $puma_pid and its workers)"
  pid_pattern=$(IFS='|'; echo "$puma_pid|${worker_pids[*]}")
  report --list | grep -E "^(PID|$pid_pattern) "
fi
for pid in "${worker_pids[@]}"; do
  echo
  echo "== leakwrap-report $pid --top 3"
  report "$pid" --top 3
  echo
  echo "== leakwrap-report $pid --by ruby --top 3"
  report "$pid" --by ruby --top 3
done
