#!/usr/bin/env bash
# CI: install, build and check everything (docs/development.md, "What CI runs and costs").
#
#   bash scripts/test.sh
#
# 1. setup: the Debian and npm packages (scripts/setup.sh).
# 2. The product as users install it -- Release, warnings as errors: the programs, the Python module
#    and the benchmarks (no test suite: it runs in 4.).
# 3. Everything under AddressSanitizer + UBSan (scripts/sanitize.sh; warnings as errors there too,
#    so the tests' own code is held to them).
# 4. The GoogleTest suite in that build. Its tests spend much of their time waiting on the programs,
#    servers and browsers they start, so clang-tidy (scripts/tidy.sh) and the fuzz targets' build run
#    beside it at the lowest CPU priority (nice 19): they take only what the tests leave idle.
# 5. The tests of the product (label "product": the Python module, the installed library and the
#    .deb, the README's commands) on the Release build, beside the suite (started with it).
# 6. Every fuzz target for a fixed time (scripts/fuzz.sh).
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
background_pid=""
background_log=$(mktemp "${TMPDIR:-/tmp}/paratune-ci-background.XXXXXX")
print_times() {
  local status=$?
  [[ -n "$background_pid" ]] && kill -- "-$background_pid" 2>/dev/null
  [[ -n "${product_pid:-}" ]] && kill -- "-$product_pid" 2>/dev/null
  [[ -n "$current" ]] && { part_names+=("$current (failed)"); part_seconds+=($((SECONDS - part_started))); }
  echo "test.sh: wall time per part"
  for i in "${!part_names[@]}"; do printf '  %-52s %5d s\n' "${part_names[$i]}" "${part_seconds[$i]}"; done
  printf '  %-52s %5d s\n' total "$SECONDS"
  command -v ccache >/dev/null && ccache --show-stats 2>/dev/null | grep -E '^ *(Hits|Misses):' | sed 's/^ */  ccache /'
  rm -f "$background_log"
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

# The parts that run beside the sanitized suite, one after the other, each line of the log timed.
background() {
  local started
  started=$SECONDS
  nice -n 19 bash scripts/tidy.sh
  echo "@@part clang-tidy (beside the suite, nice 19)|$((SECONDS - started))"
  started=$SECONDS
  nice -n 19 bash scripts/fuzz.sh --build-only
  echo "@@part fuzz build (beside the suite, nice 19)|$((SECONDS - started))"
}

part "setup (apt, npm)" bash scripts/setup.sh
command -v ccache >/dev/null && ccache --zero-stats >/dev/null
part "build: product (Release, -Werror)" bash scripts/build.sh --programs -DPARATUNE_BUILD_BENCH=ON -DPARATUNE_WERROR=ON
part "build: ASan+UBSan" bash scripts/sanitize.sh --build-only

set -m  # the background parts in a process group of their own, so that a failure stops all of them
background >"$background_log" 2>&1 &
background_pid=$!
set +m
# The product's tests beside the sanitized suite, one at a time: they need only the Release tree, and
# the suite leaves about a core idle on average (its tests wait on the programs and servers they start).
product_log=$(mktemp "${TMPDIR:-/tmp}/paratune-ci-product.XXXXXX")
product_started=$SECONDS
set -m  # in a process group of its own, as the background parts
ctest --test-dir build -L product -j 1 --output-on-failure >"$product_log" 2>&1 &
product_pid=$!
set +m
part "ASan+UBSan suite" bash scripts/sanitize.sh -LE product

current="product tests (Python, package, README; beside the suite)"
part_started=$product_started
product_status=0
wait "$product_pid" || product_status=$?
product_pid=""
cat "$product_log"
rm -f "$product_log"
part_names+=("$current")
part_seconds+=($((SECONDS - product_started)))
current=""
((product_status == 0)) || { echo "test.sh: the product tests failed (above)"; exit 1; }

current="waiting for clang-tidy and the fuzz build"
part_started=$SECONDS
background_status=0
wait "$background_pid" || background_status=$?
background_pid=""
grep -v '^@@part ' "$background_log" || true
while IFS='|' read -r name seconds; do
  part_names+=("${name#@@part }")
  part_seconds+=("$seconds")
done < <(grep '^@@part ' "$background_log")
part_names+=("(then waited for them)")
part_seconds+=($((SECONDS - part_started)))
current=""
((background_status == 0)) || { echo "test.sh: clang-tidy or the fuzz build failed (above)"; exit 1; }

part "fuzz (run)" bash scripts/fuzz.sh --seconds "${PARATUNE_FUZZ_SECONDS:-15}"
