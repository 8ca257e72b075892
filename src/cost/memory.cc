// Memory formulas: one layer's activations (layer_activation_bytes, declared in
// paratune/cost/estimate.h) and a rank's weights, gradients, optimizer state and buffers under
// ZeRO sharding (memory.h).
#include "memory.h"

#include <algorithm>
#include <vector>

#include "device.h"
#include "moe.h"

namespace paratune {

namespace {

// torchtitan's per-op selective activation checkpointing (torchtitan/distributed/
// activation_checkpoint.py, _apply_op_sac; selective_ac_option = "op", the default of its
// train_configs): torch.utils.checkpoint with a policy that saves the outputs of the ops in
// `_save_list` -- aten.mm, the SDPA (flash / efficient) kernels, reduce_scatter_tensor, aten.max --
// except every second mm of the layer ("mm_count % 2 == 0" is recomputed, counted per layer from
// 1). Everything else is recomputed in the backward. In a Llama layer the mms run wq, wk, wv, wo,
// w1, w3, w2, so wq, wv, w1 and w2 (the 1st, 3rd, 5th, 7th) are saved; without a gated MLP
// (wq wk wv wo w1 w2) wq, wv, w1. The row-parallel wo and w2 produce partial sums of the full width
// h before TP's reduce-scatter, whose output (h/t wide, with sequence parallelism) is saved too.
// What the layer keeps, bytes, all BF16 (2):
//   layer input (the checkpoint's input)                 T·h / sp
//   saved mm outputs                                     T·(heads·qk + kv·v + ...)/t, T·h for w2
//   SDPA output and its log-sum-exp (fp32)               T·heads·v/t·2 + T·heads/t·4
//   reduce-scatter outputs (tp > 1, sequence parallel)   2 · T·h/t
// The float8 linears of torchao are counted as the BF16 mms they replace: torchtitan's measured
// float8 runs weigh what their BF16 twins do (MEMORY_SOURCES.md S1: 76.8 vs 77.0 GiB, 61.8 vs 62.0).
double torchtitan_selective_bytes(const ModelSpec& m, const ParallelConfig& p, double tokens, double qk_dim,
                                  double v_dim) {
  const double b = cost_detail::kActivationBytes;
  const double t = p.tp, sp_div = p.sequence_parallel ? t : 1, h = m.hidden_size;
  const double heads = m.num_attention_heads / t, kv = std::max(1.0, m.kv_heads() / t);
  // Each mm's output width per token, in the order the layer runs them.
  std::vector<double> mm_widths{heads * qk_dim, kv * qk_dim, kv * v_dim, h, m.ffn_hidden_size / t};
  if (m.gated_mlp) mm_widths.push_back(m.ffn_hidden_size / t);  // w3
  mm_widths.push_back(h);                                         // w2
  double bytes = b * tokens * h / sp_div;                         // the checkpointed layer's input
  for (std::size_t i = 0; i < mm_widths.size(); i += 2) bytes += b * tokens * mm_widths[i];  // 1st, 3rd, ...
  bytes += b * tokens * heads * v_dim + 4 * tokens * heads;  // SDPA output, log-sum-exp
  if (p.tp > 1 && p.sequence_parallel) bytes += 2 * b * tokens * h / t;  // after wo and after w2
  return bytes;
}

}  // namespace

double layer_activation_bytes(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                              bool moe_layer, double linear_input_bytes, double moe_load) {
  // Korthikanti et al. 2022, Sec. 4.1, per layer, bytes, s·b = tokens, 16-bit activations:
  //   attention block 11·sbh + 5·a·s²·b, MLP block 19·sbh, two layer norms 4·sbh = 34·sbh + 5as²b.
  // Split by what tensor parallelism shards: the LN inputs (4), QKV input (2), MLP input (2) and
  // two dropout masks (2) are replicated over TP unless sequence parallelism splits them (/t); the
  // rest is always /t. Generalised here tensor by tensor. The inputs of the linear layers (QKV,
  // projection, fc1, fc2, experts) are kept at `linear_input_bytes` per element: 2 in BF16, 1 under
  // an FP8 recipe, which keeps the quantized copy for the weight gradient (cost/fp8.h). The
  // busiest expert-parallel rank holds moe_load x the mean routed tokens (cost/moe.h).
  const double t = p.tp;
  const double sp_div = p.sequence_parallel ? t : 1;
  const double tokens = static_cast<double>(p.mbs) * training.seq_len / p.cp;
  const double h = m.hidden_size;
  const double heads_local = m.num_attention_heads / t;
  const double b = cost_detail::kActivationBytes, lin = linear_input_bytes;
  double replicated = (2 * b + lin + lin) * tokens * h;  // two LN inputs, QKV input, MLP input
  if (m.dropout) replicated += 2 * 1 * tokens * h;        // residual dropout masks, 1 byte each
  // DTensor TP (torchtitan's plan: PrepareModuleInput gathers the norm's Shard(1) output to
  // Replicate() before wq/wk/wv and w1/w3): the mms save the gathered input, whole on every TP rank,
  // where Megatron saves its sequence shard and gathers it again in the backward. So the QKV and
  // MLP inputs are not divided by t: replicated / sp_div below undoes that for these two.
  if (training.tp_saves_gathered_inputs && p.sequence_parallel && p.tp > 1)
    replicated += (sp_div - 1) * (lin + lin) * tokens * h;
  double sharded = 0;
  double qk_dim = m.head_size(), v_dim = m.head_size();
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
    replicated += lin * tokens * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim);  // latent vectors
    sharded += b * tokens * heads_local * (2 * qk_dim + v_dim);                           // Q, K, V
  } else {
    const double kv_local = std::max(1.0, m.kv_heads() / t);
    sharded += b * tokens * (heads_local + 2 * kv_local) * m.head_size();  // Q, K, V (6sbh for MHA)
  }
  sharded += lin * tokens * heads_local * v_dim;  // attention output = projection input (2sbh)
  if (!training.flash_attention && p.recompute == RecomputeMode::kNone) {
    // softmax output (2·a·s²·b) + dropout mask (a·s²·b) + dropout output (2·a·s²·b).
    sharded += (m.dropout ? 5 : 2) * heads_local * tokens * training.seq_len;
  } else if (training.flash_attention) {
    sharded += 4 * tokens * heads_local;  // softmax log-sum-exp statistics (fp32)
  }
  const double gate = m.gated_mlp ? 2 : 1;
  if (p.recompute == RecomputeMode::kSelective && training.per_op_selective_recompute && !moe_layer)
    return torchtitan_selective_bytes(m, p, tokens, qk_dim, v_dim);
  if (moe_layer) {
    const MoeSpec& e = *m.moe;
    const double etp = p.expert_tp();
    const double routed_rows = tokens * e.top_k * etp / t * moe_load;
    const double fe_local = e.expert_ffn_hidden_size / etp;
    sharded += lin * routed_rows * h;                             // permuted expert inputs
    sharded += (b * gate + lin) * routed_rows * fe_local;         // fc1 output(s) + activation output
    sharded += 4 * tokens / sp_div * e.num_experts;               // router logits/probabilities (fp32)
    if (e.num_shared_experts > 0)
      sharded += (b * gate + lin) * tokens * (e.num_shared_experts * e.shared_ffn() / t);
  } else {
    sharded += (b * gate + lin) * tokens * (m.ffn_hidden_size / t);  // fc1 output (8sbh) + GeLU output (8sbh)
  }
  return replicated / sp_div + sharded;
}

namespace cost_detail {

ParamBytes param_bytes(const TrainingSpec& training, const Fp8Costs& fp8) {
  return ParamBytes{
      .grad = training.fp32_grad_accumulation ? 4.0 : 2.0,
      // BF16 weights, plus the FP8 copies an FP8 recipe caches across micro-batches (cost/fp8.h).
      .weight = training.amp_fp32_weights ? 4.0 : fp8.weight_bytes,
      // fp32 master + momentum (+ variance). torch AMP's fp32 weights are the master (counted as
      // weights): the optimizer adds its moments only.
      .optimizer = (training.optimizer == Optimizer::kSGD ? 8.0 : 12.0) - (training.amp_fp32_weights ? 4.0 : 0.0),
      // Adam reads+writes master, m, v (24), reads the fp32 grad (4), writes the bf16 weight (2);
      // SGD with momentum: 16 + 4 + 2. FP8: the new weights are cast once per iteration (read 2,
      // write the FP8 copies).
      .optimizer_traffic = (training.optimizer == Optimizer::kSGD ? 22.0 : 30.0) +
                           (fp8.linear_in_fp8 ? fp8.weight_bytes : 0.0),
      .unsharded_across_microbatches = training.fsdp_unsharded_across_microbatches,
      .ddp_gradient_buckets = training.ddp_gradient_buckets};
}

ShardDegrees shard_degrees(const ParallelConfig& p) {
  const int expert_dp = expert_data_parallel_size(p);
  return ShardDegrees{expert_dp, p.zero > 0 ? static_cast<double>(p.op) * p.cp : 1,
                      p.zero > 0 ? std::max(1.0, static_cast<double>(expert_dp) * p.op / p.dp) : 1};
}

MemoryBreakdown static_memory(const ParallelConfig& p, const ParamBytes& bytes, const ShardDegrees& shards,
                              double buffer_bytes, double dense_params, double expert_params,
                              double largest_layer_params, double logits_bytes) {
  MemoryBreakdown mem;
  const double params = dense_params + expert_params;
  const double sharded_params = dense_params / shards.dense + expert_params / shards.expert;
  mem.weights_bytes = bytes.weight * (p.zero == 3 ? sharded_params : params);
  mem.grads_bytes = bytes.grad * (p.zero >= 2 ? sharded_params : params);
  if (p.zero == 3 && p.pp > 1 && bytes.unsharded_across_microbatches) {
    // torchtitan's apply_fsdp (parallelize.py): "For PP, do not reshard after forward to avoid
    // per-microbatch all-gathers" (reshard_after_forward = False), and its pipeline schedule
    // syncs gradients on the last micro-batch only, so FSDP2 keeps the unsharded gradient,
    // upcast to the reduce dtype (FSDPParam.to_accumulated_grad_if_needed: fp32), in between.
    // The stage holds all its parameters gathered in BF16 (2 bytes) and their fp32 gradients (4).
    mem.weights_bytes += 2 * params;
    mem.grads_bytes += 4 * params;
  } else if (p.zero == 3) {
    mem.weights_bytes += 2 * 2 * largest_layer_params;  // two layers gathered (current + prefetched)
  }
  // torch DDP (torch/nn/parallel/distributed.py, gradient_as_bucket_view=False): the reducer copies
  // each gradient into its bucket's flat buffer for the all-reduce; the buckets span every parameter.
  if (p.zero == 0 && bytes.ddp_gradient_buckets) mem.grads_bytes += bytes.grad * params;
  mem.optimizer_bytes = bytes.optimizer * (p.zero >= 1 ? sharded_params : params);
  mem.other_bytes = buffer_bytes + logits_bytes;
  return mem;
}

}  // namespace cost_detail
}  // namespace paratune
