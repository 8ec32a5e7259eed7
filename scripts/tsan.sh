#!/usr/bin/env bash
# Runs the lock-free recording paths of libleakwrap.so (test/lockfree: the site table, the site
# counters, the bin shards, the string pool, module rescans and the reader copying a live
# segment, driven in-process without LD_PRELOAD) under ThreadSanitizer: configures a separate
# build directory with -DLEAKWRAP_SANITIZE=thread, builds only that test and runs it with CTest.
# Any TSan report fails the test (TSan exits with 66); exits with CTest's exit code.
#
#   scripts/tsan.sh [CTEST ARGS...]
#
# The build directory is $LEAKWRAP_TSAN_BUILD_DIR (default build-tsan). Every ordinary build
# runs the same test without TSan (ctest -L lockfree).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LEAKWRAP_TSAN_BUILD_DIR:-build-tsan}

scripts/setup.sh
cmake -S . -B "$build" -DLEAKWRAP_SANITIZE=thread \
  -DCMAKE_BUILD_TYPE="${LEAKWRAP_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build" --target lockfree_paths_test -j"$(nproc)"
exec ctest --test-dir "$build" -L lockfree --output-on-failure "$@"
