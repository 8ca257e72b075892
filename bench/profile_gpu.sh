#!/usr/bin/env bash
# Issue 45, item 4, and issue 41's MoE kernel benchmark: measure one H100 or H200 on the kernels the cost
# model prices, in three steps, so that the GPU machine needs PyTorch alone (no paratune build there):
#
#   bash bench/profile_gpu.sh plan    DIR   # here, with build/paratune: the measurement plans into DIR
#   (copy DIR to the GPU machine's checkout)
#   bash bench/profile_gpu.sh measure DIR   # there (PyTorch with CUDA; no paratune build needed)
#   (copy DIR back)
#   DAY=YYYY-MM-DD bash bench/profile_gpu.sh compare DIR   # here: tables and fitted calibrations beside them
#
# Every step runs from the repository root. DIR is a scratch folder (data/profiles holds the shipped H200
# measurement). `measure` names its files with today's UTC date; `compare` looks for DAY's (default today).
# The plans are for an H200 (cluster h200x1); GPU=h100 plans for an H100 (cluster h100-sxmx1), and `measure`
# checks with nvidia-smi that the GPU is the one planned for. The four profiles: Llama 3 8B at 8K (micro-batch 1 and 2, BF16, and FP8 per-tensor),
# Qwen3-30B-A3B at 4K (micro-batch 1, 2, 4: 256 to 1,024 tokens per expert) and Mixtral 8x7B at 4K. `measure`
# also runs bench/gpu/moe_expert_gemms.py (the routed experts' GEMMs, grouped and per expert; read by
# build/bench/bench_moe_expert_gemms) and measures each profile three times (run 1 is the profile; runs 2
# and 3 say how much the medians move). Takes about three minutes on an H200. Every command is printed.
set -euo pipefail
usage="usage: bench/profile_gpu.sh plan|measure|compare DIR"
step=${1:?$usage}
out=${2:?$usage}
gpu=${GPU:-h200}
case "$gpu" in
  h200) cluster=h200x1; smi_name=H200 ;;
  h100) cluster=h100-sxmx1; smi_name=H100 ;;
  *) echo "profile_gpu.sh: GPU=$gpu: h200 or h100" >&2; exit 2 ;;
esac
case "$step" in
  plan|compare) ;;
  measure)
    name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    if [[ "$name" != *"$smi_name"* ]]; then
      echo "profile_gpu.sh: the plans are for an $smi_name (GPU=$gpu), this machine has '$name'" >&2; exit 2
    fi ;;
  *) echo "profile_gpu.sh: unknown step '$step' (plan, measure or compare)" >&2; exit 2 ;;
esac
day=${DAY:-$(date -u +%Y-%m-%d)}
run() { echo "+ $*"; "$@"; }
# name, model, sequence length, global batch, then the configurations and precision flags
profiles=(
  "llama3-8b llama3-8b 8192 2 --config mbs=1 --config mbs=2"
  "llama3-8b-fp8 llama3-8b 8192 2 --config mbs=1 --config mbs=2 --precision fp8 --fp8-recipe tensorwise"
  "qwen3-30b-a3b qwen3-30b-a3b 4096 4 --config mbs=1 --config mbs=2 --config mbs=4"
  "mixtral-8x7b mixtral-8x7b 4096 2 --config mbs=1 --config mbs=2"
)
mkdir -p "$out"
for p in "${profiles[@]}"; do
  read -r name model seq batch flags <<<"$p"
  base="$out/$gpu-$name-$day"
  case "$step" in
    plan)
      # shellcheck disable=SC2086
      run build/paratune profile --model "$model" --cluster "$cluster" --seq-len "$seq" --global-batch "$batch" \
        $flags --plan "$out/$gpu-$name.plan.json" --plan-only ;;
    measure)
      for r in 1 2 3; do
        suffix=$([ $r = 1 ] && echo "" || echo ".run$r")
        run env PYTHONPATH="$PWD/python" python3 -m paratune.profile --plan "$out/$gpu-$name.plan.json" \
          --out "$base$suffix.json"
      done ;;
    compare)
      # shellcheck disable=SC2086
      run build/paratune profile --model "$model" --cluster "$cluster" --seq-len "$seq" --global-batch "$batch" \
        $flags --from "$base.json" --fit-calibration "$base.calibration.json" | tee "$base.txt" ;;
  esac
done
if [ "$step" = measure ]; then
  run python3 bench/gpu/moe_expert_gemms.py --out "$out/$gpu-moe-expert-gemms-$day.json"
fi
