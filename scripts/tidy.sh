#!/usr/bin/env bash
# Static analysis: clang-tidy 14 with the checked-in .clang-tidy over every source file of the library,
# the CLI and the fuzz targets (the trainer's only where it includes no libtorch, below); exit 1 on
# any warning (all are errors). About 6 minutes for the 104 files on 2 idle cores.
#
#   bash scripts/tidy.sh [--jobs J] [FILE...]
#
# --jobs J  files checked at once (default: the cores). FILE...: only these (default: all, below).
# Files: src/**/*.cc, fuzz/*.cc and python/src/*.cc, with the headers of include/paratune/, src/,
# fuzz/ and python/src/ they include (.clang-tidy's HeaderFilterRegex). tests/ and bench/ are out of
# scope: test and benchmark code.
# The compile database is that of build-tidy/ (clang++, Debug so that assert()s are read, the fuzz
# targets on so that fuzz/ is in it); it is only configured, never built: no source file needs a
# generated one (the schemas' framework_schemas.cc is declared where it is used). The Python
# module's files are in build-tidy-python/'s (a fuzz build has no Python module: it is sanitized).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
files=()
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done

# Not checked: the trainer's files that include libtorch. clang 14 cannot parse libtorch 1.13's headers
# in C++20 (std::vector<c10::IValue> of an incomplete IValue in ATen/core/List.h: C++20's constexpr
# vector is instantiated eagerly), and paratune's own headers need C++20. src/trainer/bubble_gate.cc
# includes no torch header and is checked.
excluded=(src/trainer/comm.cc src/trainer/coord_check.cc src/trainer/data.cc src/trainer/fused_models.cc
          src/trainer/fused_optimizer.cc src/trainer/fused_trainer.cc src/trainer/main.cc src/trainer/models.cc
          src/trainer/profile.cc src/trainer/trainer.cc)
if ((${#files[@]} == 0)); then
  mapfile -t all < <(find src fuzz python/src -name '*.cc' | sort)
  for f in "${all[@]}"; do
    [[ " ${excluded[*]} " == *" $f "* ]] || files+=("$f")
  done
fi

build=build-tidy
if [[ ! -f "$build/compile_commands.json" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPARATUNE_BUILD_FUZZ=ON \
    -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
python_build=build-tidy-python
if [[ ! -f "$python_build/compile_commands.json" ]]; then
  cmake -S . -B "$python_build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPARATUNE_BUILD_PYTHON=ON \
    -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi

logs="$build/tidy-logs"
rm -rf "$logs"
mkdir -p "$logs"
start=$(date +%s)
# One file: its report to its own log (so that parallel reports do not interleave), its status beside it.
check_file() {
  local log="$logs/${1//\//_}" database="$build"
  [[ $1 == python/* ]] && database="$python_build"
  clang-tidy-14 --quiet -p "$database" "$1" >"$log.log" 2>&1
  echo $? >"$log.status"
}
export -f check_file
export build python_build logs
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c 'check_file {}'
elapsed=$(($(date +%s) - start))

failed=()
for f in "${files[@]}"; do
  log="$logs/${f//\//_}"
  if [[ "$(cat "$log.status")" != 0 ]]; then
    failed+=("$f")
    # clang-tidy's own summary lines ("N warnings generated", "Suppressed ...") are not findings.
    grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' \
      "$log.log" || true
  fi
done
echo "tidy: ${#files[@]} files checked in ${elapsed} s (${jobs} jobs), ${#failed[@]} with warnings"
if ((${#failed[@]})); then
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
