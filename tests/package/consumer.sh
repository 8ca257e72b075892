#!/usr/bin/env bash
# Builds examples/consumer against an installed paratune both ways a project can -- CMake's
# find_package(paratune) and `pkg-config --cflags --libs paratune` -- runs both programs and checks
# what they print.
#
#   consumer.sh BUILD_DIR   installs BUILD_DIR into a temporary prefix and builds against that
#                           (CMAKE_PREFIX_PATH, PKG_CONFIG_PATH)
#   consumer.sh --system    builds against the copy installed under /usr (tests/package/deb.sh, with
#                           the .deb installed): no prefix is given, and both ways must find /usr's
#
# The compiler is $CXX (default c++), as for CMake.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
example=$(cd "$here/../../examples/consumer" && pwd)
expected="llama3.1-8b: 8.030B parameters, fits yes"
work=$(mktemp -d "${TMPDIR:-/tmp}/paratune-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake_args=()
if [[ ${1:-} == --system ]]; then
  prefix=/usr
  unset CMAKE_PREFIX_PATH PKG_CONFIG_PATH
else
  build=${1:?usage: consumer.sh BUILD_DIR | --system}
  prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix" >/dev/null
  pc=$(find "$prefix" -name paratune.pc)
  [[ -n $pc ]] || { echo "consumer: no paratune.pc installed under $prefix" >&2; exit 1; }
  cmake_args=(-DCMAKE_PREFIX_PATH="$prefix")
  export PKG_CONFIG_PATH=${pc%/*}
fi

# Whether path $2 (what was found) lies under $1, symbolic links resolved (/lib is /usr/lib).
under() { [[ $(realpath "$2") == "$(realpath "$1")"/* ]]; }
# Runs program $1 (built by $2) and checks its output.
check_output() {
  local output
  output=$("$1")
  echo "$2: $output"
  [[ $output == "$expected" ]] || { echo "consumer: $2's program printed '$output', expected '$expected'" >&2; exit 1; }
}

# CMake: find_package(paratune) -> paratune::paratune.
if ! cmake -S "$example" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >"$work/cmake.log" 2>&1 ||
   ! cmake --build "$work/cmake-build" >>"$work/cmake.log" 2>&1; then
  cat "$work/cmake.log" >&2
  echo "consumer: the CMake build of examples/consumer failed" >&2
  exit 1
fi
found=$(sed -n 's/^paratune_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
under "$prefix" "$found" || { echo "consumer: find_package(paratune) found $found, not the copy under $prefix" >&2; exit 1; }
check_output "$work/cmake-build/consumer" "find_package"

# pkg-config: one compiler command.
found=$(pkg-config --variable=pcfiledir paratune)
under "$prefix" "$found" || { echo "consumer: pkg-config found paratune.pc in $found, not under $prefix" >&2; exit 1; }
read -ra flags <<<"$(pkg-config --cflags --libs paratune)"
"${CXX:-c++}" -std=c++20 "$example/main.cc" -o "$work/pkg-config-consumer" "${flags[@]}"
check_output "$work/pkg-config-consumer" "pkg-config"
