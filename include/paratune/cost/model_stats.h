// Parameter counts and FLOPs per token of a ModelSpec — what `paratune model` prints.
#pragma once

#include "paratune/spec/model.h"

namespace paratune {

// Parameters of one decoder layer, split by where they live.
struct LayerParams {
  double attention = 0;       // q/k/v/o projections (+ MLA low-rank factors and their norms)
  double norms = 0;           // layer norms of the block
  double dense_mlp = 0;       // dense MLP (0 for an MoE layer)
  double router = 0;          // MoE gate
  double routed_expert = 0;   // ONE routed expert (multiply by num_experts or top_k)
  double shared_experts = 0;  // all shared experts of the layer

  [[nodiscard]] double non_expert() const { return attention + norms + dense_mlp + router + shared_experts; }
};

struct ParamCounts {
  double total = 0;
  double active = 0;           // per token: routed experts counted top_k times instead of num_experts
  double embedding = 0;        // input token (+ position, type) embeddings
  double output_layer = 0;     // LM head (0 when tied) and the pre-training heads of encoders
  double dense_layer_params = 0;  // one dense decoder layer
  double moe_layer_params = 0;    // one MoE decoder layer, all experts
  // One multi-token-prediction layer (ModelSpec::mtp_layers; not in total/active, as published
  // counts leave it out: DeepSeek-V3's 671B excludes its MTP module). Megatron-Core
  // multi_token_prediction.py: enorm + hnorm, eh_proj (2h -> h), one transformer layer of the kind
  // decoder layer num_layers would be; the embedding and output head are the model's own (shared).
  double mtp_layer_params = 0;   // all experts
  double mtp_layer_active = 0;   // routed experts counted top_k times
};

LayerParams layer_params(const ModelSpec& model, bool moe_layer);
ParamCounts count_parameters(const ModelSpec& model);

// Forward FLOPs for one token at sequence length `seq_len`: 2 x (active GEMM parameters, output
// layer included, embedding lookups excluded) + attention scores and values
// 2 x 2 x seq x (qk_dim + v_dim)/2 x heads per layer, halved by the causal mask when `causal`.
// Each MTP layer adds its active GEMM parameters, the output head again and one layer's attention
// (Megatron-LM counts MTP the same way in num_floating_point_operations).
// Training FLOPs = 3 x forward (backward is two GEMMs per forward GEMM; Kaplan et al. 2020).
double forward_flops_per_token(const ModelSpec& model, int seq_len);
inline double training_flops_per_token(const ModelSpec& model, int seq_len) {
  return 3 * forward_flops_per_token(model, seq_len);
}

}  // namespace paratune
