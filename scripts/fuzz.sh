#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for a fixed time and prints its executions and coverage.
#
#   bash scripts/fuzz.sh [--seconds N | --runs N] [--jobs J] [--merge] [--out DIR] [TARGET...]
#
# --seconds N  time per target (default 20); --runs N  executions per target instead (the long run:
#              --runs 10000000); --jobs J  targets run at once (default: the cores);
# --out DIR    where the runs go (default BUILD/fuzz-runs; emptied first);
# --no-asan    UBSan and coverage only, at -O2, in build-fuzz-ubsan/: several times faster, for long
#              runs; replay what they found under AddressSanitizer afterwards (--runs 0 on the kept
#              corpus: every input once);
# --merge      add the inputs that found new coverage to the kept corpus fuzz/corpus/<target>/
#              (libFuzzer -merge=1: only inputs that add coverage are kept);
# --build-only build the targets, run nothing.
# Builds the targets in build-fuzz/ (clang, PARATUNE_BUILD_FUZZ: AddressSanitizer, UBSan, coverage).
# Each target starts from its kept corpus; what it finds goes to a scratch directory
# (build-fuzz/fuzz-runs/<target>/), so a run leaves the repository as it was unless --merge.
# Exit 1 if any target crashed, leaked, broke a property, timed out (-timeout=10 s per input) or
# went past 2 GB; the input that did it is kept as build-fuzz/fuzz-runs/<target>/crash-*
# (reproduce: build-fuzz/fuzz/fuzz_<target> that-file).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
runs_per_target=-1
asan=ON
jobs=$(nproc)
runs=""
merge=0
build_only=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs_per_target="$2"; shift 2 ;;
    --out) runs="$2"; shift 2 ;;
    --no-asan) asan=OFF; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(model_yaml model_json cluster_file cluster_arg parallel_config tune_space hpo_space trial_output
             published_runs calibration)
((${#targets[@]})) || targets=("${all_targets[@]}")

build=build-fuzz
[[ "$asan" == ON ]] || build=build-fuzz-ubsan
runs=${runs:-$build/fuzz-runs}
source scripts/configure.sh
configure_tree "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPARATUNE_BUILD_FUZZ=ON \
  -DPARATUNE_FUZZ_ASAN="$asan" -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF
cmake --build "$build" -j "$(nproc)" --target fuzz
((build_only)) && exit 0
rm -rf "$runs"
mkdir -p "$runs"

# One target: its own scratch corpus first (new inputs are written there), the kept one read-only.
run_target() {
  local target="$1" out="$runs/$1" limit=(-max_total_time="$seconds")
  ((runs_per_target >= 0)) && limit=(-runs="$runs_per_target")
  mkdir -p "$out/new" "fuzz/corpus/$target"
  UBSAN_OPTIONS=print_stacktrace=1 "$build/fuzz/fuzz_$target" "$out/new" "fuzz/corpus/$target" \
    "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/" >"$out/log" 2>&1
  echo $? >"$out/status"
}
export -f run_target
export build runs seconds runs_per_target
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_target {}'

failed=0
printf '%-16s %12s %10s %8s %8s %8s  %s\n' target executions exec/s cov ft corpus result
for target in "${targets[@]}"; do
  out="$runs/$target"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log")
  last=$(grep -E '^#[0-9]+' "$out/log" | grep -E ' cov: ' | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
  result=ok
  if [[ "$(cat "$out/status")" != 0 ]] || compgen -G "$out/crash-*" >/dev/null || compgen -G "$out/leak-*" >/dev/null ||
     compgen -G "$out/timeout-*" >/dev/null || compgen -G "$out/oom-*" >/dev/null; then
    result="FAILED: $(ls "$out" | grep -E '^(crash|leak|timeout|oom)-' | head -1) (log: $out/log)"
    failed=1
  fi
  printf '%-16s %12s %10s %8s %8s %8s  %s\n' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
    "${corpus:-?}" "$result"
done
if ((failed)); then
  for target in "${targets[@]}"; do
    [[ "$(cat "$runs/$target/status")" == 0 ]] || { echo "--- $target:"; grep -v -E '^#[0-9]+' "$runs/$target/log" | tail -60; }
  done
  exit 1
fi
if ((merge)); then
  for target in "${targets[@]}"; do
    "$build/fuzz/fuzz_$target" -merge=1 "fuzz/corpus/$target" "$runs/$target/new" >"$runs/$target/merge.log" 2>&1
    echo "merged $target: $(ls "fuzz/corpus/$target" | wc -l) inputs kept"
  done
fi
