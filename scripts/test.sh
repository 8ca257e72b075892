#!/usr/bin/env bash
# Install, build (Release, warnings as errors), and run the whole test suite (unit, CLI golden and
# end-to-end tests) under AddressSanitizer + UBSan; then every fuzz target for a fixed time and
# clang-tidy (README "Checked builds": what each part costs on CI's 2 cores). The suite runs once,
# in the sanitized build: it checks everything the Release run would, and more, and CI's time goes
# further (scripts/build.sh + ctest in build/ runs it as built for use). The exception: the Python
# module, which a sanitized build does not have (an interpreter does not load the sanitizer runtimes
# first) -- its tests, and the .deb that carries it, run in the Release build.
#
#   bash scripts/test.sh
#
# PARATUNE_FUZZ_SECONDS (default 15): time per fuzz target. Prints each part's wall time at the end,
# also when a part fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests that need a server they start themselves (tests/support: PostgreSQL, sshd, a one-node Slurm
# cluster) fail here, instead of skipping, when it cannot start: CI must not pass with them skipped.
export PARATUNE_REQUIRE_SERVERS=1

part_names=()
part_seconds=()
part_started=$SECONDS
current=""
print_times() {
  local status=$?
  [[ -n "$current" ]] && { part_names+=("$current (failed)"); part_seconds+=($((SECONDS - part_started))); }
  echo "test.sh: wall time per part"
  for i in "${!part_names[@]}"; do printf '  %-28s %5d s\n' "${part_names[$i]}" "${part_seconds[$i]}"; done
  printf '  %-28s %5d s\n' total "$SECONDS"
  exit "$status"
}
trap print_times EXIT

# Runs one part, timed: part NAME COMMAND...
part() {
  current="$1"
  shift
  part_started=$SECONDS
  "$@"
  part_names+=("$current")
  part_seconds+=($((SECONDS - part_started)))
  current=""
}

part "setup (apt)" bash scripts/setup.sh
part "build (Release, -Werror)" bash scripts/build.sh -DPARATUNE_WERROR=ON
part "Python module and .deb (Release)" ctest --test-dir build -R '^(Python\.|Package\.Deb)' -j 2 --output-on-failure
part "ASan+UBSan build and suite" bash scripts/sanitize.sh
part "fuzz (build + run)" bash scripts/fuzz.sh --seconds "${PARATUNE_FUZZ_SECONDS:-15}"
part "clang-tidy" bash scripts/tidy.sh
