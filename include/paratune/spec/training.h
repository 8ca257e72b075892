// TrainingSpec: what is trained, independent of how it is parallelised.
#pragma once

#include "paratune/spec/enums.h"

namespace paratune {

struct ModelSpec;

struct TrainingSpec {
  int seq_len = 0;       // tokens per sequence
  int global_batch = 0;  // sequences per iteration (all data-parallel replicas, all micro-batches)
  Precision precision = Precision::kBF16;
  // With precision fp8: how the FP8 GEMM inputs are scaled (enums.h). Which operations run in FP8
  // depends on it (cost/fp8.h); norms and the output layer stay BF16, core attention too unless
  // fp8_attention (below).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  // With precision fp8: the linear layers' parameters are held in FP8 (no BF16 copy) and the
  // sharded optimizer's / FSDP's parameter all-gather moves FP8 (Megatron-LM --fp8-param-gather,
  // used by NVIDIA's FP8 recipes, R20.6; torchtitan enable_fsdp_float8_all_gather, T7.5). Needs a
  // sharded optimizer (zero >= 1).
  bool fp8_param_gather = false;
  // MoE routing balance; sets the busiest expert's load relative to the mean (cost model).
  MoeBalancing moe_balancing = MoeBalancing::kAuxLoss;
  // Expert capacity factor (tokens an expert accepts / its fair share); 0 = dropless (Megatron's
  // default). With a capacity factor, the busiest expert processes at most that many times the mean.
  double moe_capacity_factor = 0;
  Optimizer optimizer = Optimizer::kAdamW;
  bool flash_attention = true;  // fused attention: no s^2 activations, causal blocks skipped
  // Megatron-LM keeps gradients in an FP32 buffer (main_grad) and reduces them in FP32; FSDP with a
  // bf16 reduce dtype does not. Affects gradient memory and DP traffic.
  bool fp32_grad_accumulation = true;
  // ZeRO-3/FSDP gathers parameters in fp32 (FSDP keeping fp32 parameters, e.g. Composer's
  // MixedPrecision DEFAULT) instead of bf16.
  bool fp32_param_gather = false;

  // --- How a framework holds activations (set by the published-run readers, src/calib; the
  // planner's own configurations leave them false: Megatron-LM's behaviour) ---
  // recompute=selective is torchtitan's per-op SAC (activation_checkpoint.py, selective_ac_option
  // "op"): it saves the outputs of every other matmul and of attention instead of Megatron's
  // "recompute the attention core" (cost/memory.cc).
  bool per_op_selective_recompute = false;
  // FP8 through torchao's Float8Linear: its autograd function saves the high-precision (BF16) input
  // and weight for the backward and casts them again there, and caches no FP8 weight copy
  // (cost/fp8.cc), unlike Transformer Engine, which keeps the FP8 copies.
  bool fp8_saves_bf16_inputs = false;
  // The loss is an unfused cross-entropy on logits cast to fp32 (torchtitan: F.cross_entropy(
  // pred.float(), labels)): its backward holds three fp32 copies of the logits (cost/memory.cc).
  bool fp32_unfused_cross_entropy = false;
  // ZeRO-3 (FSDP2) with pipeline parallelism keeps each stage's parameters unsharded from the first
  // micro-batch's forward to the last one's backward, and accumulates their gradients unsharded in
  // the reduce dtype (fp32) until the last micro-batch (torchtitan; cost/memory.cc).
  bool fsdp_unsharded_across_microbatches = false;
  // Tensor parallelism through DTensor (torchtitan's ColwiseParallel after a sequence-parallel
  // norm): the linear layers save the all-gathered input, not Megatron's sequence shard
  // (cost/memory.cc).
  bool tp_saves_gathered_inputs = false;
  // torch.autocast over an fp32 model (torch AMP): the fp32 weights (4 bytes) are the optimizer's
  // master copy, so Adam adds only its two moments (8 bytes) (cost/memory.cc).
  bool amp_fp32_weights = false;
  // torch DistributedDataParallel: its reducer's bucket buffers are a second copy of the gradients
  // (gradient_as_bucket_view=False, the default) (cost/memory.cc).
  bool ddp_gradient_buckets = false;
  // The attention kernel is FlashAttention-2 or an older generation, written before Hopper (PyTorch
  // SDPA's flash backend, which torchtitan puts first below Blackwell; the flash-attn 2 package;
  // llm-foundry's Triton kernel), where Transformer Engine selects cuDNN's fused attention on
  // Hopper and newer "for performance reasons" (TE dot_product_attention/utils.py). On Hopper it
  // runs at Calibration::flash_attention_2_speed_for of the fused kernel's rate.
  bool flash_attention_2 = false;
  // Core attention in FP8: Transformer Engine's cuDNN fused attention with FP8 inputs, forward and
  // backward (Megatron-Core TransformerConfig.fp8_dot_product_attention, which Megatron-Bridge's
  // MXFP8 MoE recipes set; Megatron-LM's own command line has no flag for it, so the planner leaves
  // it off). Runs at Calibration::fp8_attention_speed times the BF16 fused kernel. Needs fp8.
  bool fp8_attention = false;
};

void validate(const TrainingSpec& training);
// What the training asks of the model: a sequence no longer than a learned position table.
void validate(const ModelSpec& model, const TrainingSpec& training);

}  // namespace paratune
