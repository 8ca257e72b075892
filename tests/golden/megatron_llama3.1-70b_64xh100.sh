#!/bin/bash
# Megatron-LM 0.20.0-dev (d98e8a64) launch written by paratune: pretrain_gpt.py on 8 node(s) x 8 GPUs.
# Checked against that commit; run it in the NGC container its install guide names:
# nvcr.io/nvidia/pytorch:26.01-py3 (Megatron-LM docs/get-started/install.md).
# Several nodes: sbatch --nodes=8 --ntasks-per-node=1 --gpus-per-node=8 this script.
set -euo pipefail
: "${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}"
: "${DATA_PATH:?set DATA_PATH to the preprocessed data prefix (tools/preprocess_data.py)}"
: "${TOKENIZER:?set TOKENIZER to a Hugging Face tokenizer name or path}"
CHECKPOINT_DIR="${CHECKPOINT_DIR:-$PWD/checkpoints}"  # saved to and resumed from
export CUDA_DEVICE_MAX_CONNECTIONS=1  # tp or cp > 1 before Blackwell (R6.1)
NNODES=8
GPUS_PER_NODE=8
if [ "$NNODES" -gt 1 ]; then
  MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)  # reads all: no SIGPIPE
  LAUNCH=(srun --ntasks-per-node=1 torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:29500" --rdzv-id "$SLURM_JOB_ID")
else
  LAUNCH=(torchrun --standalone --nproc-per-node "$GPUS_PER_NODE")
fi
ARGS=(
  --tensor-model-parallel-size 4
  --pipeline-model-parallel-size 4
  --context-parallel-size 1
  --sequence-parallel
  --use-distributed-optimizer
  --micro-batch-size 1
  --global-batch-size 128
  --num-virtual-stages-per-pipeline-rank 5
  --overlap-grad-reduce
  --overlap-param-gather
  --tp-comm-overlap
  --bf16
  --num-layers 80
  --hidden-size 8192
  --ffn-hidden-size 28672
  --num-attention-heads 64
  --group-query-attention
  --num-query-groups 8
  --seq-length 8192
  --max-position-embeddings 8192
  --position-embedding-type rope
  --normalization RMSNorm
  --swiglu
  --disable-bias-linear
  --untie-embeddings-and-output-weights
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --data-path "${DATA_PATH}"
  --split 99,1,0
  --tokenizer-type HuggingFaceTokenizer
  --tokenizer-model "${TOKENIZER}"
  --train-iters 1000
  --lr 3.0e-4
  --min-lr 3.0e-5
  --lr-decay-style cosine
  --lr-warmup-iters 100
  --weight-decay 0.1
  --adam-beta1 0.9
  --adam-beta2 0.95
  --clip-grad 1.0
  --init-method-std 0.02
  --save "${CHECKPOINT_DIR}"
  --load "${CHECKPOINT_DIR}"
  --save-interval 500
  --log-interval 10
  --eval-interval 500
  --eval-iters 10
)
"${LAUNCH[@]}" "$MEGATRON_LM/pretrain_gpt.py" "${ARGS[@]}"
