#!/usr/bin/env bash
# Configures and builds paratune (Release) into ./build.
#
#   bash scripts/build.sh [--programs] [CMAKE_ARGS...]
#
# Default: everything -- the programs, the Python module, the test suite and the benchmarks.
# --programs: the programs and the Python module only (the quick start, and CI's Release part,
#             which runs the tests of what users install: the Python module, the package, the README).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/configure.sh
parts=(-DPARATUNE_BUILD_TESTS=ON -DPARATUNE_BUILD_BENCH=ON)
if [[ "${1:-}" == --programs ]]; then
  parts=(-DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF)
  shift
fi
configure_tree build -DCMAKE_BUILD_TYPE=Release "${parts[@]}" "$@"
cmake --build build -j "$(nproc)"
