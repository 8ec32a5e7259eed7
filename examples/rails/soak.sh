#!/usr/bin/env bash
# Soaks the Rails app (config.ru) in puma under leakwrap and reports it at boot and after the soak.
#
# Usage: examples/rails/soak.sh [REQUESTS]
#   REQUESTS (default 5000, a multiple of 4): siege sends exactly that many, from 4 clients.
# Builds ext/table_of_contents.c into a temporary directory (one cc command, against the headers
# of the ruby on PATH: package ruby-dev). The build directory (default <repo>/build, or
# $BUILD_DIR) must hold lib/libleakwrap.so and bin/leakwrap-report. Puma listens on a loopback
# port that the kernel picks, and is stopped with SIGINT (a clean exit, which removes its
# segment) when the script ends.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${BUILD_DIR:-$here/../../build}" && pwd)
requests=${1:-5000}
clients=4

die() { echo "soak: $*" >&2; exit 1; }

[[ $requests =~ ^[0-9]+$ ]] && ((requests > 0 && requests % clients == 0)) ||
  die "REQUESTS must be a positive multiple of $clients (siege -c $clients -r REQUESTS/$clients)"
for tool in ruby puma siege cc; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh"
done
for file in lib/libleakwrap.so bin/leakwrap-report; do
  [[ -e $build/$file ]] || die "$build/$file is missing: build first (cmake --build $build)"
done
report() { "$build/bin/leakwrap-report" "$@"; }
sites() { report "$1" --format json --top 1 | ruby -rjson -e 'puts JSON.parse($stdin.read)["totals"]["sites"]'; }

work=$(mktemp -d)
puma_pid=
# shellcheck source=../puma_server.sh
source "$here/../puma_server.sh"
trap 'stop_puma; rm -rf "$work"' EXIT

# As CMake builds the project's other extensions (examples/ruby/ruby_extension.cmake): -O0 and
# frame pointers, so that the report names the very function that called malloc.
mkdir "$work/ruby"
read -r header_dir arch_header_dir link_flags < <(ruby -e \
  'puts RbConfig::CONFIG.values_at("rubyhdrdir", "rubyarchhdrdir", "LIBRUBYARG_SHARED").join(" ")')
[[ -e $header_dir/ruby.h ]] || die "no $header_dir/ruby.h: install ruby-dev (scripts/setup.sh)"
# shellcheck disable=SC2086 # LIBRUBYARG_SHARED is a list of flags
cc -shared -fPIC -g -O0 -fno-omit-frame-pointer -I"$header_dir" -I"$arch_header_dir" \
  "$here/ext/table_of_contents.c" -o "$work/ruby/table_of_contents.so" $link_flags

echo "soak: Rails in puma (single mode), under $build/lib/libleakwrap.so"
started=$(date +%s%N)
LD_PRELOAD=$build/lib/libleakwrap.so RUBYLIB=$work/ruby \
  puma -C "$here/config/puma.rb" --bind tcp://127.0.0.1:0 "$here/config.ru" >"$work/puma.log" 2>&1 &
puma_pid=$!

# Ready when puma says so. Waiting on the log, not on a probe request, keeps the request count exact.
for _ in $(seq 600); do
  kill -0 "$puma_pid" 2>/dev/null || { cat "$work/puma.log" >&2; die "puma exited while starting"; }
  grep -q 'Use Ctrl-C to stop' "$work/puma.log" && break
  sleep 0.1
done
grep -q 'Use Ctrl-C to stop' "$work/puma.log" || { cat "$work/puma.log" >&2; die "puma did not start in 60 s"; }
booted=$(date +%s%N)
port=$(grep -Eo 'Listening on http://127\.0\.0\.1:[0-9]+' "$work/puma.log" | grep -Eo '[0-9]+$')
echo "soak: puma $puma_pid booted Rails in $(((booted - started) / 1000000)) ms, listening on 127.0.0.1:$port"

echo
echo "== at boot: leakwrap-report $puma_pid --by ruby --top 5"
report "$puma_pid" --by ruby --top 5
echo "== at boot: $(sites "$puma_pid") sites"
# Every Ruby line, for the diff after the soak: a few MB, where the native rows of a Rails
# process (over 200000 stacks) would take hundreds.
report "$puma_pid" --by ruby --format json --top 0 -o "$work/boot.json"

write_siege_home "$work"
# A moment past the boot by more than the birth grid's cell there (1/8 of the time since the
# start), in whole seconds since puma started; siege starts after it, so that the memory born
# after it is the requests' (--born-after below).
born_after=$(((booted - started) * 5 / 4 / 1000000000 + 1))
while (($(date +%s%N) - started < born_after * 1000000000)); do sleep 0.1; done
echo
echo "soak: siege -c $clients -r $((requests / clients)): $requests requests"
HOME=$work timeout 600 siege -c "$clients" -r "$((requests / clients))" "http://127.0.0.1:$port/" </dev/null
sleep 0.5 # let the out-of-band GC of config/puma.rb run after the last request

echo
echo "== after $requests requests: leakwrap-report $puma_pid --by ruby --top 5"
report "$puma_pid" --by ruby --top 5
echo "== after $requests requests: $(sites "$puma_pid") sites"
echo
echo "== what grew during the soak: leakwrap-report diff (at boot) (after the soak), first 3 rows"
report "$puma_pid" --by ruby --format json --top 0 -o "$work/after.json"
report diff "$work/boot.json" "$work/after.json" --top 3
echo
# The same from one snapshot, without the one taken at boot: the memory born after the boot.
echo "== born during the soak: leakwrap-report $puma_pid --by ruby --born-after ${born_after}s --top 3"
report "$puma_pid" --by ruby --born-after "${born_after}s" --top 3
echo
echo "== peak RSS of puma: $(awk '/^VmHWM/ { print $2, $3 }' "/proc/$puma_pid/status")"
