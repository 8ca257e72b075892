#!/usr/bin/env bash
# Quick start: install, build, and run paratune on a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/paratune estimate --model llama3.1-70b --cluster dgx-h100:8 --seq-len 8192 --global-batch 128 \
  --config "dp=4,tp=4,pp=4,vpp=5,mbs=1,zero=1,sp=true,recompute=selective"
