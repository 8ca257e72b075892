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
  // depends on it (cost/fp8.h); core attention, norms and the output layer stay BF16.
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
};

void validate(const TrainingSpec& training);
// What the training asks of the model: a sequence no longer than a learned position table.
void validate(const ModelSpec& model, const TrainingSpec& training);

}  // namespace paratune
