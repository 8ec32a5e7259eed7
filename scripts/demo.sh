#!/usr/bin/env bash
# Builds leakwrap, runs the leaky C example under the profiler, and shows its leak while it runs.
# It installs and builds only what that needs (scripts/build.sh --demo); scripts/test.sh builds
# and tests everything.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
build=${LEAKWRAP_BUILD_DIR:-build}
source scripts/lib/profiled.sh

step "Installing the missing packages it needs and building the tool and the example into $build/"
scripts/build.sh --demo

example_output=$(mktemp)
trap 'stop_profiled; rm -f "$example_output"' EXIT

step "Starting examples/c/leaky_cache under LD_PRELOAD=$build/lib/libleakwrap.so"
start_profiled "$example_output" "$build/bin/leaky_cache" 1000
cat "$example_output"

step "Its live allocations, biggest first: $build/bin/leakwrap-report $profiled_pid --top 5"
echo "(the leak: read_request_body, 100 live blocks, 51200 bytes)"
"$build/bin/leakwrap-report" "$profiled_pid" --top 5

step "Stopping the example with SIGTERM (it exits normally, which removes its segment)"
segment=/dev/shm/leakwrap.$profiled_pid
stop_profiled
if [[ -e $segment ]]; then echo "unexpected: $segment is still there"; else echo "$segment is gone"; fi
