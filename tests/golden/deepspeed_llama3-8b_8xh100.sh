#!/bin/bash
# DeepSpeed 0.16.5 (38327e07) launch written by paratune: Megatron-DeepSpeed's pretrain_gpt.py on 1 node(s) x 8 GPUs.
# The parallel degrees and the model are Megatron-DeepSpeed arguments; $DS_CONFIG has the batch, precision and ZeRO.
# paratune checks the ds_config against DeepSpeed's keys; it has no schema of Megatron-DeepSpeed's flags.
# Checked against that DeepSpeed commit; Megatron-DeepSpeed's behaviour read at microsoft/Megatron-DeepSpeed f4157bea.
# Run it on the node: the deepspeed launcher starts one process per GPU.
set -euo pipefail
: "${MEGATRON_DEEPSPEED:?set MEGATRON_DEEPSPEED to a Megatron-DeepSpeed checkout}"
: "${DATA_PATH:?set DATA_PATH to the preprocessed data prefix (tools/preprocess_data.py)}"
: "${TOKENIZER:?set TOKENIZER to a Hugging Face tokenizer name or path}"
CHECKPOINT_DIR="${CHECKPOINT_DIR:-$PWD/checkpoints}"  # saved to and resumed from
export CUDA_DEVICE_MAX_CONNECTIONS=1  # tp > 1: ordered TP communication
NNODES=1
GPUS_PER_NODE=8
DS_CONFIG="${DS_CONFIG:-$PWD/ds_config.json}"
cat > "$DS_CONFIG" <<'JSON'
{
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 1,
  "gradient_accumulation_steps": 16,
  "steps_per_print": 10,
  "wall_clock_breakdown": false,
  "gradient_clipping": 1.0,
  "bf16": {
    "enabled": true
  },
  "data_types": {
    "grad_accum_dtype": "fp32"
  },
  "zero_optimization": {
    "stage": 1,
    "overlap_comm": true,
    "contiguous_gradients": true
  },
  "activation_checkpointing": {
    "partition_activations": false,
    "contiguous_memory_optimization": false,
    "cpu_checkpointing": false
  }
}
JSON
LAUNCH=(deepspeed --num_nodes "$NNODES" --num_gpus "$GPUS_PER_NODE" --master_port 29500)
ARGS=(
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 1
  --no-pipeline-parallel
  --sequence-parallel
  --zero-stage 1
  --micro-batch-size 1
  --global-batch-size 64
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  --deepspeed-activation-checkpointing
  --bf16
  --num-layers 32
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
  --num-key-value-heads 8
  --seq-length 8192
  --max-position-embeddings 8192
  --use-rotary-position-embeddings
  --no-position-embedding
  --normalization rmsnorm
  --swiglu
  --disable-bias-linear
  --untie-embeddings-and-output-weights
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --use-flash-attn-v2
  --data-path "${DATA_PATH}"
  --split 99,1,0
  --tokenizer-type HFTokenizer
  --tokenizer-model "${TOKENIZER}"
  --train-iters 1000
  --optimizer adam
  --lr 3.0e-4
  --min-lr 3.0e-5
  --lr-decay-style cosine
  --lr-warmup-iters 100
  --weight-decay 0.1
  --adam-beta1 0.9
  --adam-beta2 0.95
  --clip-grad 1.0
  --init-method-std 0.02
  --log-interval 10
  --save "${CHECKPOINT_DIR}"
  --load "${CHECKPOINT_DIR}"
  --save-interval 500
  --eval-interval 500
  --eval-iters 10
  --deepspeed
  --deepspeed_config "$DS_CONFIG"
)
"${LAUNCH[@]}" "$MEGATRON_DEEPSPEED/pretrain_gpt.py" "${ARGS[@]}"
