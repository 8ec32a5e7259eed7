#!/usr/bin/env bash
# Builds everything and runs the whole test suite; exits with CTest's exit code. CI runs this
# script (.ci/run): a compiler warning fails the build unless LEAKWRAP_WERROR=OFF is set.
set -euo pipefail
cd "$(dirname "$0")/.."

# Warnings are errors, and the preload's invariants are checked at run time (debug_check.h).
LEAKWRAP_WERROR=${LEAKWRAP_WERROR:-ON} scripts/build.sh -DLEAKWRAP_DEBUG=ON
# No single test should come near the timeout; it only guards against a hung target.
exec ctest --test-dir "${LEAKWRAP_BUILD_DIR:-build}" --output-on-failure -j2 --timeout 120
