#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds leakwrap, its tests and examples
# into build/ (or $LEAKWRAP_BUILD_DIR) as RelWithDebInfo (or $LEAKWRAP_BUILD_TYPE); warnings are
# errors when $LEAKWRAP_WERROR is ON (scripts/test.sh, and so CI). Arguments are passed to
# cmake's configure step (scripts/test.sh: -DLEAKWRAP_DEBUG=ON).
#   scripts/build.sh --demo [ARGS]   only what scripts/demo.sh runs: its packages (setup.sh --demo),
#                                    no tests, and the targets libleakwrap.so, leakwrap-report and
#                                    leaky_cache, without debug info
set -euo pipefail
cd "$(dirname "$0")/.."

setup=() tests=ON targets=() build_type=(-DCMAKE_BUILD_TYPE="${LEAKWRAP_BUILD_TYPE:-RelWithDebInfo}")
if [[ ${1-} == --demo ]]; then
  shift
  setup=(--demo) tests=OFF targets=(--target leakwrap leakwrap-report leaky_cache)
  # -O1 and no -g: compiling the reader (its nlohmann/json and CLI11 code) is most of the demo's
  # time, and -O2 and the debug info take a third of that and more; the demo reads one small
  # segment. The example keeps its own -g, which is all the demo's report needs. A later
  # scripts/build.sh or scripts/test.sh configures the tested RelWithDebInfo build again.
  build_type=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG"
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG")
fi

scripts/setup.sh "${setup[@]}"
build_dir=${LEAKWRAP_BUILD_DIR:-build}
# LEAKWRAP_BUILD_TESTS is set either way: a build directory the demo configured without tests
# gets them back from a later scripts/build.sh or scripts/test.sh.
cmake -S . -B "$build_dir" "${build_type[@]}" \
  -DLEAKWRAP_WERROR="${LEAKWRAP_WERROR:-OFF}" -DLEAKWRAP_BUILD_TESTS="$tests" "$@"
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
