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
cd "$work"
mkdir failed
xargs -P "$(nproc)" -I{} bash -c '
  log=failed/$(echo "$1" | tr / _).log
  echo "#include <$1>" | ${CXX:-c++} -std=c++20 -fsyntax-only $PARATUNE_HEADER_CFLAGS -x c++ - 2>"$log" && rm "$log"
  exit 0' _ {} <headers
shopt -s nullglob
logs=(failed/*.log)
if ((${#logs[@]})); then
  for f in "${logs[@]}"; do echo "--- $f"; head -20 "$f"; done >&2
  echo "headers: ${#logs[@]} of $count installed headers do not compile alone" >&2
  exit 1
fi
echo "headers: all $count installed headers compile alone"
