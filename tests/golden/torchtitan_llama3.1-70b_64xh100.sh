#!/bin/bash
# torchtitan v0.2.2 (73a0e697) launch written by paratune: llama3 70B on 8 node(s) x 8 GPUs.
# Several nodes: sbatch --nodes=8 --ntasks-per-node=1 --gpus-per-node=8 this script; $CONFIG
# must then be on a filesystem every node sees.
# Arguments are passed on to torchtitan, e.g. --training.steps 10 (command line > job file).
# Checked against that torchtitan commit, with the PyTorch its requirements name.
set -euo pipefail
: "${TORCHTITAN:?set TORCHTITAN to a torchtitan v0.2.2 checkout (its requirements installed)}"
: "${TOKENIZER:?set TOKENIZER to the directory with the model's Hugging Face tokenizer files (scripts/download_hf_assets.py)}"
: "${DATASET:?set DATASET to the training data of torchtitan's c4 loader: allenai/c4 or a local copy}"
CONFIG="${CONFIG:-$PWD/paratune_torchtitan.toml}"
cat > "$CONFIG" <<'TOML'
[job]
dump_folder = "./outputs"
description = "paratune plan for llama3.1-70b: dp=4,tp=4,pp=4,vpp=5,cp=1,ep=1,etp=4,mbs=1,sp=true,zero=3,op=4,recompute=selective,stage_layers=20/20/20/20,schedule=interleaved-1f1b,grad_sync=overlapped,tp_comm_overlap=true"

[model]
name = "llama3"
flavor = "70B"
# hf_assets_path (the tokenizer): on the command line, from $TOKENIZER

[optimizer]
name = "AdamW"
lr = 3e-4
beta1 = 0.9
beta2 = 0.95
eps = 1e-8
weight_decay = 0.1

[lr_scheduler]
warmup_steps = 100
decay_type = "cosine"
min_lr_factor = 0.1

[training]
dataset = "c4"
# dataset_path (the data for the c4 loader): on the command line, from $DATASET
local_batch_size = 32
global_batch_size = 128
seq_len = 8192
steps = 1000
max_norm = 1.0

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = 4
fsdp_reshard_after_forward = "always"
tensor_parallel_degree = 4
enable_async_tensor_parallel = true
context_parallel_degree = 1
pipeline_parallel_degree = 4
pipeline_parallel_schedule = "Interleaved1F1B"
pipeline_parallel_microbatch_size = 1
module_fqns_per_model_part = [["tok_embeddings", "layers.0", "layers.1", "layers.2", "layers.3"], ["layers.4", "layers.5", "layers.6", "layers.7"], ["layers.8", "layers.9", "layers.10", "layers.11"], ["layers.12", "layers.13", "layers.14", "layers.15"], ["layers.16", "layers.17", "layers.18", "layers.19"], ["layers.20", "layers.21", "layers.22", "layers.23"], ["layers.24", "layers.25", "layers.26", "layers.27"], ["layers.28", "layers.29", "layers.30", "layers.31"], ["layers.32", "layers.33", "layers.34", "layers.35"], ["layers.36", "layers.37", "layers.38", "layers.39"], ["layers.40", "layers.41", "layers.42", "layers.43"], ["layers.44", "layers.45", "layers.46", "layers.47"], ["layers.48", "layers.49", "layers.50", "layers.51"], ["layers.52", "layers.53", "layers.54", "layers.55"], ["layers.56", "layers.57", "layers.58", "layers.59"], ["layers.60", "layers.61", "layers.62", "layers.63"], ["layers.64", "layers.65", "layers.66", "layers.67"], ["layers.68", "layers.69", "layers.70", "layers.71"], ["layers.72", "layers.73", "layers.74", "layers.75"], ["layers.76", "layers.77", "layers.78", "layers.79", "norm", "output"]]

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"

[compile]
enable = true

[checkpoint]
enable = true
folder = "checkpoint"
interval = 500

[metrics]
log_freq = 10
# Evaluation: torchtitan validates on a dataset of its own; set [validation] enable = true,
# dataset_path and freq to have it.
TOML
export PYTHONPATH="$TORCHTITAN${PYTHONPATH:+:$PYTHONPATH}"
NNODES=8
GPUS_PER_NODE=8
if [ "$NNODES" -gt 1 ]; then
  MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)  # reads all: no SIGPIPE
  LAUNCH=(srun --ntasks-per-node=1 torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:29500" --rdzv-id "$SLURM_JOB_ID")
else
  LAUNCH=(torchrun --standalone --nproc-per-node "$GPUS_PER_NODE")
fi
"${LAUNCH[@]}" -m torchtitan.train --job.config_file "$CONFIG" \
  --model.hf_assets_path "$TOKENIZER" --training.dataset_path "$DATASET" "$@"
