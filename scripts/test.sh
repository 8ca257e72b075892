#!/usr/bin/env bash
# CI: install, build and check everything (docs/development.md, "What CI runs and costs").
#
#   bash scripts/test.sh
#
# 1. setup: the Debian and npm packages (scripts/setup.sh).
# 2. The product as users install it -- Release, warnings as errors: the programs, the Python module
#    and the benchmarks (no test suite: it runs in 3.), then the tests of that product (label
#    "product"): the Python module, the installed library and the .deb, the README's commands.
# 3. The GoogleTest suite under AddressSanitizer + UBSan (scripts/sanitize.sh; warnings as errors
#    there too, so the tests' own code is held to them).
# 4. Every fuzz target for a fixed time (scripts/fuzz.sh), 5. clang-tidy (scripts/tidy.sh).
# Every build goes through ccache (scripts/ccache_env.sh): a second run on the same machine, from
# any folder, recompiles only what changed; a cold cache only costs time.
#
# PARATUNE_FUZZ_SECONDS (default 15): time per fuzz target. Prints each part's wall time and the
# compiler cache's hits at the end, also when a part fails.
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
  for i in "${!part_names[@]}"; do printf '  %-40s %5d s\n' "${part_names[$i]}" "${part_seconds[$i]}"; done
  printf '  %-40s %5d s\n' total "$SECONDS"
  command -v ccache >/dev/null && ccache --show-stats 2>/dev/null | grep -E '^ *(Hits|Misses):' | sed 's/^ */  ccache /'
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

part "setup (apt, npm)" bash scripts/setup.sh
command -v ccache >/dev/null && ccache --zero-stats >/dev/null
part "build: product (Release, -Werror)" bash scripts/build.sh --programs -DPARATUNE_BUILD_BENCH=ON -DPARATUNE_WERROR=ON
part "product tests (Python, package, README)" ctest --test-dir build -L product -j 2 --output-on-failure
part "ASan+UBSan build and suite" bash scripts/sanitize.sh -LE product
part "fuzz (build + run)" bash scripts/fuzz.sh --seconds "${PARATUNE_FUZZ_SECONDS:-15}"
part "clang-tidy" bash scripts/tidy.sh
