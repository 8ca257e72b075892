// A rank's memory apart from activations: bytes per parameter by precision and optimizer, ZeRO's
// shard degrees, and the weights, gradients, optimizer state and fixed buffers they add up to.
// memory.cc also defines layer_activation_bytes (paratune/cost/estimate.h). Internal to the cost
// module.
#pragma once

#include "fp8.h"
#include "paratune/cost/estimate.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune::cost_detail {

// Bytes per parameter held and moved, by precision and optimizer.
struct ParamBytes {
  double grad;             // fp32 main_grad (Megatron) or bf16
  double weight;           // bf16 (+ fp8 copy)
  double optimizer;        // fp32 master (+ momentum) (+ variance)
  double optimizer_traffic;  // read + written by one optimizer step
  // TrainingSpec::fsdp_unsharded_across_microbatches: with zero = 3 and pp > 1, the stage's
  // parameters stay gathered (BF16) and their gradients accumulate unsharded in fp32.
  bool unsharded_across_microbatches = false;
  bool ddp_gradient_buckets = false;  // TrainingSpec::ddp_gradient_buckets
};

ParamBytes param_bytes(const TrainingSpec& training, const Fp8Costs& fp8);

// Optimizer-state sharding: dense parameters over op x cp ranks (cp ranks hold the same weights),
// expert parameters over their share of the expert-data-parallel group (Megatron-Core's size,
// cost/moe.h: dp·cp·tp/(etp·ep), larger than dp·cp/ep when etp < tp).
struct ShardDegrees {
  int expert_dp;
  double dense;
  double expert;
};

ShardDegrees shard_degrees(const ParallelConfig& p);

// A rank's memory without activations: weights, gradients and optimizer state of its parameters
// under ZeRO sharding (Rajbhandari et al. 2020), the fixed buffers and the last stage's logits.
// `buffer_bytes`: the configuration's fixed buffers (StageCostModel::Impl::buffer_bytes).
MemoryBreakdown static_memory(const ParallelConfig& p, const ParamBytes& bytes, const ShardDegrees& shards,
                              double buffer_bytes, double dense_params, double expert_params,
                              double largest_layer_params, double logits_bytes);

}  // namespace paratune::cost_detail
