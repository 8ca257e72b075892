#!/usr/bin/env bash
# Builds everything under AddressSanitizer + UndefinedBehaviorSanitizer and runs the whole test suite.
#
#   bash scripts/sanitize.sh [CTEST_ARGS...]
#
# build-sanitize/: g++, -O1 -g, assertions on (Debug), -fsanitize=address,undefined,float-cast-overflow
# with -fno-sanitize-recover=all (the first report ends the process). The tests run the sanitized
# `paratune`, trial programs and `paratune-train` as child processes too. Every sanitizer report, of
# a test or of any process it started, goes to build-sanitize/sanitizer-logs/; the run fails if
# there is one, even where the test itself passed (a child's crash that a test tolerates).
# (g++, not clang++: libtorch 1.13's headers do not compile with clang 14 in C++20.)
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-sanitize
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPARATUNE_SANITIZE=ON -DPARATUNE_BUILD_TESTS=ON \
    -DPARATUNE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"

logs="$PWD/$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
# abort_on_error: a report ends the process with SIGABRT, which no test mistakes for an exit code.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$logs/asan"
export UBSAN_OPTIONS="abort_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"

status=0
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@") || status=$?
if compgen -G "$logs/*" >/dev/null; then
  echo "sanitizer reports ($logs):"
  for f in "$logs"/*; do echo "--- $f"; head -80 "$f"; done
  status=1
fi
exit "$status"
