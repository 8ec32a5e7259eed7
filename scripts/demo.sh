#!/usr/bin/env bash
# Builds leakwrap, runs the leaky C example under the profiler, and shows its leak while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
build=${LEAKWRAP_BUILD_DIR:-build}

step "Installing missing dependencies and building into $build/"
scripts/build.sh

example_output=$(mktemp)
example_pid=
cleanup() {
  if [[ -n $example_pid ]] && kill -0 "$example_pid" 2>/dev/null; then kill -TERM "$example_pid"; fi
  rm -f "$example_output"
}
trap cleanup EXIT

step "Starting examples/c/leaky_cache under LD_PRELOAD=$build/lib/libleakwrap.so"
LD_PRELOAD=$(realpath "$build/lib/libleakwrap.so") "$build/bin/leaky_cache" 1000 > "$example_output" &
example_pid=$!
for _ in $(seq 100); do
  grep -q ' ready' "$example_output" && break
  kill -0 "$example_pid" 2>/dev/null || { echo "the example died:" >&2; cat "$example_output" >&2; exit 1; }
  sleep 0.1
done
grep -q ' ready' "$example_output" || { echo "the example did not get ready in 10 s" >&2; exit 1; }
cat "$example_output"

step "Its live allocations, biggest first: $build/bin/leakwrap-report $example_pid --top 5"
echo "(the leak: read_request_body, 100 live blocks, 51200 bytes)"
"$build/bin/leakwrap-report" "$example_pid" --top 5

step "Stopping the example with SIGTERM (it exits normally, which removes its segment)"
kill -TERM "$example_pid"
wait "$example_pid"
segment=/dev/shm/leakwrap.$example_pid
example_pid=
if [[ -e $segment ]]; then echo "unexpected: $segment is still there"; else echo "$segment is gone"; fi
