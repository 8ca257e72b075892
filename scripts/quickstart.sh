#!/usr/bin/env bash
# Quick start: install, build, and run paratune on a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/paratune estimate --model llama3.1-70b --cluster examples/cluster-h100-64.yaml --seq-len 8192 --global-batch 128 \
  --config "dp=2,tp=8,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=full"
