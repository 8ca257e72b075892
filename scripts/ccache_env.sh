#!/usr/bin/env bash
# Sourced by every build script (build.sh, sanitize.sh, fuzz.sh): the compiler cache they share.
#
# ccache (Debian's package; scripts/setup.sh installs it) keyed on paths relative to the checkout
# (CCACHE_BASEDIR) and not on the build directory's name (CCACHE_NOHASHDIR), so that a clean clone
# in another folder -- each CI run -- reuses what an earlier build on the same machine compiled. The
# cache lives in ccache's default place (~/.cache/ccache, or CCACHE_DIR); a cold cache only costs
# time. Without ccache the builds run as before. Sets PARATUNE_CMAKE_LAUNCHER: the CMake arguments
# that put ccache in front of the compiler (empty without it).
#
# What would defeat it: an absolute path of the checkout on a compile command. The tests' paths are
# therefore compiled into one file (tests/test_paths.cc), not passed to every test file.
PARATUNE_CMAKE_LAUNCHER=()
if command -v ccache >/dev/null; then
  CCACHE_BASEDIR="$(pwd -P)"
  export CCACHE_BASEDIR
  export CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-20G}"
  PARATUNE_CMAKE_LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
