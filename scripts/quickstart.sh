#!/usr/bin/env bash
# Quick start: install, build the programs, and run paratune on a shipped example.
# Builds the programs and the Python module only -- not the test suite or the benchmarks, which the
# quick start never runs (scripts/test.sh builds and runs everything).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== quickstart: %s (%s)\n' "$1" "$(date +%T)"; }
step "1/3 the Debian and npm packages paratune needs (scripts/setup.sh; skipped when present)"
bash scripts/setup.sh
step "2/3 building the programs and the Python module (Release) into build/"
bash scripts/build.sh --programs
# The main job: the fastest parallel configuration of Mixtral-8x22B on 128 H100 (the example
# cluster file with 16 nodes) that fits, with Megatron-LM arguments for it.
step "3/3 planning Mixtral-8x22B on 128 H100 for Megatron-LM"
./build/paratune plan --model mixtral-8x22b --cluster examples/cluster-h100-64.yaml:16 --seq-len 4096 \
  --global-batch 512 --emit megatron
