#!/usr/bin/env bash
# Issue 45, item 4: profile the one GPU of a lent device machine (an H100 or H200 with PyTorch) for
# Llama-3-8B and a small MoE (Qwen3-30B-A3B), write the profiles under data/profiles/ and the
# measured-vs-predicted tables, before and after the profile, next to them. Prepared to finish in
# about ten minutes; run from the repository root of a built tree:
#
#   bash bench/profile_gpu.sh [OUT_DIR]          # OUT_DIR defaults to data/profiles
#
# The GPU is read from nvidia-smi (H100 -> h100x1, H200 -> h200x1). Every command is printed first.
set -euo pipefail
out=${1:-data/profiles}
mkdir -p "$out"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$name" in
  *H200*) cluster=h200x1; tag=h200 ;;
  *H100*) cluster=h100x1; tag=h100 ;;
  *) echo "profile_gpu.sh: '$name' is neither an H100 nor an H200" >&2; exit 2 ;;
esac
day=$(date -u +%Y-%m-%d)
run() { echo "+ $*"; "$@"; }
# Llama 3 8B: micro-batch 1 and 2 at 8K (tp 1: one GPU), fitted calibration written beside it.
run build/paratune profile --model llama3-8b --cluster "$cluster" --seq-len 8192 --global-batch 2 \
  --config mbs=1 --config mbs=2 --warmup 3 --repetitions 10 --out "$out/$tag-llama3-8b-$day.json" \
  --fit-calibration "$out/$tag-llama3-8b-$day.calibration.json" | tee "$out/$tag-llama3-8b-$day.txt"
# A small MoE: Qwen3-30B-A3B's widths (128 experts of FFN 768, top 8) at 4K, one micro-batch.
run build/paratune profile --model qwen3-30b-a3b --cluster "$cluster" --seq-len 4096 --global-batch 1 \
  --config mbs=1 --warmup 3 --repetitions 10 --out "$out/$tag-qwen3-30b-a3b-$day.json" \
  --fit-calibration "$out/$tag-qwen3-30b-a3b-$day.calibration.json" | tee "$out/$tag-qwen3-30b-a3b-$day.txt"
# The same tables again as JSON, for the note.
for m in llama3-8b:8192:2 qwen3-30b-a3b:4096:1; do
  IFS=: read -r model seq batch <<<"$m"
  build/paratune profile --model "$model" --cluster "$cluster" --seq-len "$seq" --global-batch "$batch" \
    --from "$out/$tag-$model-$day.json" --json > "$out/$tag-$model-$day.table.json"
done
