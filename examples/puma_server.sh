# Sourced by the soak scripts of examples/puma and examples/rails and by test/bench/compare.sh:
# what running puma under siege takes.

# siege's settings in DIR/.siege/siege.conf, for a run with HOME=DIR (siege writes
# ~/.siege/siege.conf when there is none): no HTML parsing (it would fetch more URLs than
# asked), a new connection per request.
write_siege_home() {
  mkdir -p "$1/.siege"
  printf '%s\n' 'verbose = false' 'parser = false' 'protocol = HTTP/1.1' 'connection = close' \
    'logging = false' 'show-logfile = false' 'json_output = false' >"$1/.siege/siege.conf"
}

# Stops the puma started (its pid in $puma_pid) the clean way, SIGINT, so that its segments are
# removed; SIGKILL only if it does not stop within 10 s.
stop_puma() {
  [[ -n $puma_pid ]] && kill -0 "$puma_pid" 2>/dev/null || return 0
  kill -INT "$puma_pid"
  for _ in $(seq 100); do kill -0 "$puma_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$puma_pid" 2>/dev/null && { echo "soak: puma did not stop on SIGINT; killing it" >&2; kill -KILL "$puma_pid"; }
  wait "$puma_pid" 2>/dev/null || true
}
