#!/usr/bin/env bash
# Installs every Debian package paratune needs to build, test and benchmark, and the npm packages
# of web/ (the reports' chart library, the browser test driver).
# Idempotent: packages already present are left as they are. Run as root.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  ninja-build ccache  # the build scripts: Ninja, and a compiler cache shared by every clone (scripts/ccache_env.sh)
  dpkg-dev file  # the .deb (CPack's DEB generator): dpkg-shlibdeps computes its Depends, file(1) finds the programs
  libeigen3-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libnlopt-cxx-dev
  libsqlite3-dev  # study store
  libpq-dev postgresql  # studies on PostgreSQL (libpq); the tests start a private server (initdb, pg_ctl)
  libmuparser-dev  # constraints of tuning search spaces
  libre2-dev  # --step-time-regex: linear-time matching of trial output (no recursion)
  libxgboost-dev  # the xgboost baseline of `paratune tune`
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-dev  # scripts/sanitize.sh, scripts/fuzz.sh: clang's AddressSanitizer, UBSan and libFuzzer
  clang-tidy  # scripts/tidy.sh: static analysis (clang-tidy 14, .clang-tidy)
  librsvg2-bin  # rsvg-convert: the tests render the simulator's SVG timeline
  zlib1g-dev dataset-fashion-mnist  # paratune-train's image data: gzipped IDX files
  libtorch-dev libgloo-dev  # paratune-train: libtorch 1.13 (CPU) and the Gloo headers c10d's ProcessGroupGloo needs
  libopenblas0-openmp  # libtorch's BLAS: OpenBLAS (OpenMP, so it follows torch's thread count) instead of the 10x slower reference BLAS
  fortunes  # paratune-train's text corpus (byte-level language model)
  bsdutils  # script(1): a test runs `paratune calibrate` on a pseudo-terminal
  openssh-server openssh-client  # the SSH backend's tests start their own sshd (tests/support/ssh_server.h)
  slurmctld slurmd slurm-client munge  # the Slurm backend; its tests start a one-node cluster (tests/support/slurm_cluster.h)
  libcpp-httplib-dev  # `paratune dashboard`: the HTTP server (header-only cpp-httplib)
  python3-dev pybind11-dev  # the Python module (python/, `import paratune`)
  python3-pytest python3-numpy  # its tests (tests/python), which tune a numpy model
  python3-torch  # `python3 -m paratune.profile` (docs/profile.md) measures with PyTorch; tests/python/test_profile.py
  chromium  # the tests load every HTML report and the live dashboard in headless Chromium (tests/web)
)
# Node.js and npm: the chart library of the HTML reports (embedded at build time) and the browser
# test driver, from web/package-lock.json. A machine with Node.js from elsewhere keeps it.
command -v npm >/dev/null || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The browser-side packages, exactly as locked (web/node_modules; nothing is fetched at build or run time).
web="$(dirname "$0")/../web"
if [[ ! -f "$web/node_modules/.package-lock.json" ]] || ! cmp -s "$web/package-lock.json" "$web/node_modules/.paratune-installed-lock.json"; then
  echo "setup: npm ci in web/"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$web/package-lock.json" "$web/node_modules/.paratune-installed-lock.json"
else
  echo "setup: web/node_modules up to date"
fi
