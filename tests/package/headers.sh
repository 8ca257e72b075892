#!/usr/bin/env bash
# The public API is the installed headers and nothing else: every header of an installed copy's
# include/paratune/ compiles alone -- a translation unit that includes just it, with only the
# installed prefix and `pkg-config --cflags paratune` on the include path, outside the source tree --
# so none includes a file of src/ or of the build tree, or leans on a header included before it.
# Usage: headers.sh BUILD_DIR. The compiler is $CXX (default c++).
set -euo pipefail
build=${1:?usage: headers.sh BUILD_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/paratune-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(find "$work/prefix" -name paratune.pc)
export PKG_CONFIG_PATH=${pc%/*}
PARATUNE_HEADER_CFLAGS=$(pkg-config --cflags paratune)
export PARATUNE_HEADER_CFLAGS

cd "$work/prefix/include"
find paratune -name '*.h' | sort >"$work/headers"
count=$(wc -l <"$work/headers")
((count > 0)) || { echo "headers: no header installed under $work/prefix/include/paratune" >&2; exit 1; }
# One compiler per header, as many at a time as there are cores; a failure leaves its log in failed/.
# A header whose preprocessed text (the copy's path replaced) passed before with the same compiler
# and flags is not compiled again: the key is everything the compiler would read, so the answer is
# the same (as scripts/tidy.sh caches clang-tidy's). The cache: PARATUNE_HEADER_CACHE, else
# ~/.cache/paratune/headers.
cd "$work"
mkdir failed
cache="${PARATUNE_HEADER_CACHE:-$HOME/.cache/paratune/headers}"
mkdir -p "$cache"
compiler_key=$( { ${CXX:-c++} --version; echo "$PARATUNE_HEADER_CFLAGS" | sed "s|$work|@WORK@|g"; } | sha256sum | cut -c1-64)
export cache compiler_key work
xargs -P "$(nproc)" -I{} bash -c '
  set -o pipefail
  log=failed/$(echo "$1" | tr / _).log
  unit="#include <$1>"
  key=""
  if text=$(echo "$unit" | ${CXX:-c++} -std=c++20 -E -P $PARATUNE_HEADER_CFLAGS -x c++ - 2>/dev/null); then
    key=$( { echo "$compiler_key"; echo "$unit"; echo "$text" | sed "s|$work|@WORK@|g"; } | sha256sum | cut -c1-64)
    [[ -f "$cache/$key" ]] && exit 0
  fi
  if echo "$unit" | ${CXX:-c++} -std=c++20 -fsyntax-only $PARATUNE_HEADER_CFLAGS -x c++ - 2>"$log"; then
    rm "$log"
    [[ -n "$key" ]] && touch "$cache/$key"
  fi
  exit 0' _ {} <headers
shopt -s nullglob
logs=(failed/*.log)
if ((${#logs[@]})); then
  for f in "${logs[@]}"; do echo "--- $f"; head -20 "$f"; done >&2
  echo "headers: ${#logs[@]} of $count installed headers do not compile alone" >&2
  exit 1
fi
echo "headers: all $count installed headers compile alone"
