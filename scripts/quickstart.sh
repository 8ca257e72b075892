#!/usr/bin/env bash
# Quick start: install, build, and run paratune on a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# The main job: the fastest parallel configuration of Mixtral-8x22B on 128 H100 (the example
# cluster file with 16 nodes) that fits, with Megatron-LM arguments for it.
./build/paratune plan --model mixtral-8x22b --cluster examples/cluster-h100-64.yaml:16 --seq-len 4096 \
  --global-batch 512 --emit megatron
