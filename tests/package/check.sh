#!/usr/bin/env bash
# Installs the build into a temporary prefix, then configures, builds and runs tests/package against
# it with find_package(paratune): the installed CMake package works for a project of its own.
# Usage: check.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S "$here" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$prefix/consumer-build" > /dev/null
output=$("$prefix/consumer-build/consumer")
echo "$output"
[[ "$output" == "llama3.1-8b: 8.030B parameters, fits yes" ]]
