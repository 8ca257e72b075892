#!/usr/bin/env bash
# Builds everything under AddressSanitizer + UndefinedBehaviorSanitizer and runs the whole test suite.
#
#   bash scripts/sanitize.sh [--build-only] [CTEST_ARGS...]
#
# --build-only: build, run nothing (CI builds first, then runs the suite beside other work).
# build-sanitize/: g++, -O1 -g, assertions on (Debug), -fsanitize=address,undefined,float-cast-overflow
# with -fno-sanitize-recover=all (the first report ends the process). The tests run the sanitized
# `paratune`, trial programs and `paratune-train` as child processes too. Every sanitizer report, of
# a test or of any process it started, goes to build-sanitize/sanitizer-logs/; the run fails if
# there is one, even where the test itself passed (a child's crash that a test tolerates).
# (g++, not clang++: libtorch 1.13's headers do not compile with clang 14 in C++20.)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ "${1:-}" == --build-only ]]; then
  build_only=1
  shift
fi

build=build-sanitize
source scripts/configure.sh
# Warnings are errors here too: this is the one build of the tests' own code.
configure_tree "$build" -DCMAKE_BUILD_TYPE=Debug -DPARATUNE_SANITIZE=ON -DPARATUNE_BUILD_TESTS=ON \
  -DPARATUNE_BUILD_BENCH=OFF -DPARATUNE_WERROR=ON
cmake --build "$build" -j "$(nproc)"
((build_only)) && exit 0

logs="$PWD/$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
# abort_on_error: a report ends the process with SIGABRT, which no test mistakes for an exit code.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$logs/asan"
export UBSAN_OPTIONS="abort_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"

status=0
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@") || status=$?

# LeakSanitizer's at-exit check stops the process's threads with ptrace; when it cannot read one
# thread's registers (that thread was already exiting) it logs "Unable to get registers from thread
# N." and goes on, treating that thread's whole stack as reachable, or skipping a thread already gone
# (libsanitizer lsan_common.cpp, ProcessThreads). That line is a notice about the check, not a
# finding: a leak found in the same process is still written to the same log and fails the run. A
# log with nothing else is only shown.
lsan_notice='^==[0-9]+==Unable to get registers from thread [0-9]+\.$'
for f in "$logs"/*; do
  [[ -e "$f" ]] || continue
  if [[ -s "$f" ]] && ! grep -Evq "$lsan_notice" "$f"; then
    echo "LeakSanitizer notice only (not a finding), $f: $(head -1 "$f")"
    rm -f "$f"
  fi
done
if compgen -G "$logs/*" >/dev/null; then
  echo "sanitizer reports ($logs):"
  for f in "$logs"/*; do echo "--- $f"; head -80 "$f"; done
  status=1
fi
exit "$status"
