#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds leakwrap, its tests and examples
# into build/ (or $LEAKWRAP_BUILD_DIR) as RelWithDebInfo (or $LEAKWRAP_BUILD_TYPE); warnings are
# errors when $LEAKWRAP_WERROR is ON (scripts/test.sh, and so CI). Arguments are passed to
# cmake's configure step (scripts/test.sh: -DLEAKWRAP_DEBUG=ON).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_dir=${LEAKWRAP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${LEAKWRAP_BUILD_TYPE:-RelWithDebInfo}" \
  -DLEAKWRAP_WERROR="${LEAKWRAP_WERROR:-OFF}" "$@"
cmake --build "$build_dir" -j"$(nproc)"
