#!/usr/bin/env bash
# Static analysis: clang-tidy 14 with the checked-in .clang-tidy over every source file of the library,
# the CLI, the Python module and the fuzz targets (the trainer's only where it includes no libtorch,
# below); exit 1 on any warning (all are errors).
#
#   bash scripts/tidy.sh [--jobs J] [FILE...]
#
# --jobs J  translation units checked at once (default: the cores). FILE...: only the translation units
#           that hold these files (default: all).
# What is checked: src/**/*.cc, fuzz/*.cc and python/src/*.cc, with the headers of include/paratune/,
# src/, fuzz/ and python/src/ they include (.clang-tidy's HeaderFilterRegex); tests/ and bench/ are
# out of scope. The sources are checked as they are compiled: in the unity batches of
# cmake/unity.cmake (a batch parses the shared headers once, so it is checked in about half the time
# of its files one by one), and the files compiled alone on their own.
# The compile database is that of build-tidy/ (clang++, Debug so that assert()s are read, the fuzz
# targets on so that fuzz/ is in it); it is only configured, never built. The Python module's files
# are in build-tidy-python/'s (a fuzz build has no Python module: it is sanitized).
#
# A translation unit that passed is remembered in ~/.cache/paratune/tidy (PARATUNE_TIDY_CACHE), keyed
# on clang-tidy's version, .clang-tidy and the unit's preprocessed text with the checkout's path taken
# out: a later run, from any clone on this machine, checks again only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
wanted=()
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) wanted+=("$1"); shift ;;
  esac
done

build=build-tidy
python_build=build-tidy-python
source scripts/configure.sh
configure_tree --no-cache "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPARATUNE_BUILD_FUZZ=ON \
  -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
configure_tree --no-cache "$python_build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ -DPARATUNE_BUILD_PYTHON=ON \
  -DPARATUNE_BUILD_TESTS=OFF -DPARATUNE_BUILD_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON

# The translation units, as "DATABASE_DIR FILE" lines. Not checked: the trainer's files that include
# libtorch (its unity batches, and main.cc). clang 14 cannot parse libtorch 1.13's headers in C++20
# (std::vector<c10::IValue> of an incomplete IValue in ATen/core/List.h: C++20's constexpr vector is
# instantiated eagerly), and paratune's own headers need C++20. src/trainer/bubble_gate.cc includes
# no torch header: it is compiled alone (CMakeLists.txt) and checked.
root=$(pwd -P)
mapfile -t units < <(python3 - "$root" "$build" "$python_build" <<'EOF'
import json, re, sys
root, tree, python_tree = sys.argv[1:]

def entries(tree):
    return [e["file"] for e in json.load(open(f"{root}/{tree}/compile_commands.json"))]

# build-tidy: the library's and the program's batches, and the files of src/ and fuzz/ compiled alone.
for path in entries(tree):
    torch = path.startswith(f"{root}/src/trainer/") and not path.endswith("/bubble_gate.cc")
    if re.search(r"/unity/paratune_(lib_)?\d+\.cc$", path) or (re.match(re.escape(root) + r"/(src|fuzz)/", path) and not torch):
        print(tree, path)
# build-tidy-python: the Python module's batches and files (the library there is the same as above).
for path in entries(python_tree):
    if re.search(r"/unity/paratune_python_\d+\.cc$", path) or path.startswith(f"{root}/python/src/"):
        print(python_tree, path)
EOF
)

# FILE... given: the units that hold them (a batch includes its files by relative path).
if ((${#wanted[@]})); then
  selected=()
  for unit in "${units[@]}"; do
    file=${unit#* }
    for w in "${wanted[@]}"; do
      w=$(realpath "$w")
      if [[ "$file" == "$w" ]] || { [[ "$file" == */unity/* ]] && grep -q "/${w#"$root"/}\"" "$file"; }; then
        selected+=("$unit")
        break
      fi
    done
  done
  ((${#selected[@]})) || { echo "tidy: none of ${wanted[*]} is in a checked translation unit" >&2; exit 2; }
  units=("${selected[@]}")
fi

logs="$build/tidy-logs"
rm -rf "$logs"
mkdir -p "$logs"
cache="${PARATUNE_TIDY_CACHE:-$HOME/.cache/paratune/tidy}"
mkdir -p "$cache"
settings_key=$( { clang-tidy-14 --version; cat .clang-tidy; } | sha256sum | cut -c1-64)
start=$(date +%s)
# One unit: its report to its own log (so that parallel reports do not interleave), its status beside
# it ("cached" when an identical unit passed before).
check_unit() {
  local database="${1%% *}" file="${1#* }"
  local log="$logs/${file//\//_}"
  local command key
  # Its compile command, made to print the preprocessed text (no line markers, no dependency file).
  command=$(python3 -c '
import json, re, sys
command = next(e["command"] for e in json.load(open(sys.argv[1])) if e["file"] == sys.argv[2])
print(re.sub(r" -(o|MT|MF) \S+| -MD", "", command) + " -E -P -o -")' "$database/compile_commands.json" "$file")
  # The key: that text with the checkout's path replaced, the same in every clone. A unit that does
  # not preprocess is checked (and fails) as usual.
  key=$( { echo "$settings_key"; echo "${command//$root/@ROOT@}";
           (cd "$database" && eval "$command" 2>/dev/null) | sed "s|$root|@ROOT@|g"; } | sha256sum | cut -c1-64)
  if [[ -f "$cache/$key" ]]; then
    echo cached >"$log.status"
    return
  fi
  clang-tidy-14 --quiet -p "$database" "$file" >"$log.log" 2>&1
  local status=$?
  echo "$status" >"$log.status"
  ((status == 0)) && touch "$cache/$key"
  return 0
}
export -f check_unit
export logs cache settings_key root
printf '%s\n' "${units[@]}" | xargs -P "$jobs" -I{} bash -c 'check_unit "{}"'
elapsed=$(($(date +%s) - start))

failed=()
cached=0
for unit in "${units[@]}"; do
  file=${unit#* }
  log="$logs/${file//\//_}"
  status=$(cat "$log.status")
  if [[ "$status" == cached ]]; then
    cached=$((cached + 1))
  elif [[ "$status" != 0 ]]; then
    failed+=("$file")
    # clang-tidy's own summary lines ("N warnings generated", "Suppressed ...") are not findings.
    grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' \
      "$log.log" || true
  fi
done
echo "tidy: ${#units[@]} translation units in ${elapsed} s (${jobs} jobs; ${cached} unchanged since they passed), ${#failed[@]} with warnings"
if ((${#failed[@]})); then
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
