#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds leakwrap, its tests and examples
# into build/ (or $LEAKWRAP_BUILD_DIR) as RelWithDebInfo (or $LEAKWRAP_BUILD_TYPE). Arguments
# are passed to cmake's configure step (e.g. -DLEAKWRAP_DEBUG=ON).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build_dir=${LEAKWRAP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${LEAKWRAP_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build_dir" -j"$(nproc)"
