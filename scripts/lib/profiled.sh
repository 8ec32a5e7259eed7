# Runs a program under the preload and keeps it alive while it is reported on: sourced by
# scripts/demo.sh and scripts/regenerate-docs.sh. Needs $build (the build directory).
#
#   start_profiled OUTPUT [ENV=VALUE...] CMD ARGS...
#     starts CMD with LD_PRELOAD=$build/lib/libleakwrap.so, its stdout in OUTPUT, and returns once
#     it says it is ready: the examples print "... ready, waiting for SIGINT/SIGTERM", the test
#     programs "READY" (test/programs/handshake.h). Sets profiled_pid.
#   stop_profiled
#     lets it end normally, which removes its segment: the test programs exit at the end of
#     their standard input, the examples on SIGTERM.

profiled_pid=
profiled_stdin=

start_profiled() {
  local output=$1; shift
  local env=()
  while [[ $1 == *=* ]]; do env+=("$1"); shift; done
  # The program's standard input is a FIFO held open here, so that closing it releases a test
  # program (and only then: /dev/null would release it at once).
  profiled_stdin=$(mktemp -u)
  mkfifo "$profiled_stdin"
  env LD_PRELOAD="$(realpath "$build/lib/libleakwrap.so")" "${env[@]}" "$@" \
    < "$profiled_stdin" > "$output" &
  profiled_pid=$!
  exec {profiled_stdin_fd}> "$profiled_stdin"
  local _
  for _ in $(seq 300); do
    grep -q -e ' ready' -e '^READY$' "$output" && return 0
    if ! kill -0 "$profiled_pid" 2>/dev/null; then
      echo "$* died before it was ready:" >&2; cat "$output" >&2; return 1
    fi
    sleep 0.1
  done
  echo "$* was not ready in 30 s" >&2
  return 1
}

stop_profiled() {
  [[ -n $profiled_pid ]] || return 0
  exec {profiled_stdin_fd}>&-
  rm -f "$profiled_stdin"
  local _
  for _ in $(seq 4); do kill -0 "$profiled_pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$profiled_pid" 2>/dev/null; then kill -TERM "$profiled_pid"; fi
  wait "$profiled_pid" || true
  profiled_pid=
}
