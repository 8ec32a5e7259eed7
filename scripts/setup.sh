#!/usr/bin/env bash
# Installs the Debian packages leakwrap needs to build and test, only those that are missing.
# Safe to run any number of times. As a non-root user it only says what to run.
#   scripts/setup.sh          everything: the tool, the tests, the benchmarks and the examples
#   scripts/setup.sh --demo   only what building libleakwrap.so and leakwrap-report needs, which
#                             is all scripts/demo.sh runs: a few minutes less on a fresh machine
set -euo pipefail

# What configure needs with -DLEAKWRAP_BUILD_TESTS=OFF.
packages=(
  g++ make cmake pkg-config                            # toolchain
  liburcu-dev libunwind-dev libdw-dev                  # libleakwrap.so and leakwrap-report
  libcli11-dev nlohmann-json3-dev                      # leakwrap-report's command line and JSON
  zlib1g-dev                                           # leakwrap-report --format pprof (gzip)
)
case ${1-} in
  --demo) ;;
  "") packages+=(
  build-essential                                      # Debian's whole build toolchain (dpkg-dev besides g++, make)
  libcpp-httplib-dev                                   # the tests' HTTP client (serve has a server of its own)
  prometheus prometheus-node-exporter                  # promtool and the end-to-end metrics tests
  golang-go                                            # go tool pprof, reads it in the tests
  libgtest-dev libbenchmark-dev                        # tests and the micro benchmark
  librsvg2-bin                                         # rsvg-convert: the tests render plot's SVG
  python3 perl git                                     # workloads of the smoke tests
  libc6-dbg                                            # glibc's lines under --libc-lines (test/e2e/libc_frames_test.cpp)
  sqlite3 util-linux strace                            # compatibility and fault tests; script, setpriv, strace
  tmux                                                 # drives leakwrap-report top in a terminal
  clang libclang-rt-14-dev                             # the parser's fuzzer (scripts/fuzz.sh)
  clang-format                                         # the code_format test (.clang-format)
  ruby ruby-dev puma siege                             # Ruby examples and tests (puma from Debian)
  time heaptrack libjemalloc2                          # test/bench/compare.sh (libjemalloc2: its jemalloc-prof variant)
  ruby-railties ruby-redcarpet ruby-nokogiri           # examples/rails: Rails 6.1 (its controller layer), and its test
  ) ;;
  *) echo "usage: scripts/setup.sh [--demo]" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} required packages are installed"
  exit 0
fi

if ((EUID != 0)); then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
