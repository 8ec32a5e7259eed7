#!/usr/bin/env bash
# Builds everything and runs the whole test suite; exits with CTest's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."

# With the preload's invariants checked at run time (preload/debug_check.h).
scripts/build.sh -DLEAKWRAP_DEBUG=ON
# No single test should come near the timeout; it only guards against a hung target.
exec ctest --test-dir "${LEAKWRAP_BUILD_DIR:-build}" --output-on-failure -j2 --timeout 120
