#!/usr/bin/env bash
# Install, build, and run the whole test suite (unit, CLI golden and end-to-end tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DPARATUNE_WERROR=ON  # CI: a warning is an error
cd build && ctest --output-on-failure -j "$(nproc)"
