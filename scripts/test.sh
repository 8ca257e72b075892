#!/usr/bin/env bash
# Install, build, and run the whole test suite (unit, CLI golden and end-to-end tests); then the
# checked builds: the suite again under AddressSanitizer + UBSan, and every fuzz target for a fixed
# time (README "Sanitizers and fuzzing": what each part costs on CI's 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DPARATUNE_WERROR=ON  # CI: a warning is an error
(cd build && ctest --output-on-failure -j "$(nproc)")
bash scripts/sanitize.sh
bash scripts/fuzz.sh --seconds "${PARATUNE_FUZZ_SECONDS:-15}"
