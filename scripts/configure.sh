#!/usr/bin/env bash
# Sourced by the build scripts: configure_tree [--no-cache] BUILD_DIR CMAKE_ARGS... configures a build
# tree with Ninja (when installed; Make otherwise) and the compiler cache of scripts/ccache_env.sh
# (--no-cache: without it, for a compile database clang-tidy reads). A tree configured earlier with
# another generator is configured afresh (CMake refuses to switch).
source "$(dirname "${BASH_SOURCE[0]}")/ccache_env.sh"
configure_tree() {
  local launcher=("${PARATUNE_CMAKE_LAUNCHER[@]}")
  if [[ "$1" == --no-cache ]]; then
    launcher=(-UCMAKE_CXX_COMPILER_LAUNCHER)
    shift
  fi
  local build="$1"
  shift
  local generator="Unix Makefiles"
  command -v ninja >/dev/null && generator=Ninja
  if [[ -f "$build/CMakeCache.txt" ]] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=$generator" "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
  cmake -S . -B "$build" -G "$generator" "${launcher[@]}" "$@" >/dev/null
}
