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

// The layer norms' outputs that --recompute-modules layernorm drops, bytes, before the division by
// tp under sequence parallelism. Megatron-Core checkpoints a norm only where it is a module of its
// own (transformer_layer.py: recompute_input_layernorm / recompute_pre_mlp_layernorm, not for an
// IdentityOp); its output is the next linear's saved input, kept at `lin` bytes an element, and it
// is recomputed from the norm's input (the residual stream, still kept). Megatron-Core's
// Transformer Engine layer specs (gpt_layer_specs.py) fuse the input norm into the QKV linear of
// standard attention and the pre-MLP norm into a dense MLP's fc1 (TELayerNormColumnParallelLinear,
// which keeps its input itself), so separate norms are the input norm of MLA and the pre-MLP norm
// of MoE layers:
//   MLA:       lin·T·h   (the q/kv down-projections' input)
//   MoE layer: lin·T·h   (the router's and shared experts' input)
// (Our reading of the layer specs, from memory of Megatron-LM; Megatron-Bridge SKILL.md says only
// "Input and pre-MLP normalization outputs ... savings depend on ... which graph paths are active".)
double layernorm_recompute_freed(const ModelSpec& m, const ParallelConfig& p, bool moe_layer, double tokens,
                                 double lin) {
  if (!p.recomputes(RecomputeModule::kLayernorm)) return 0;
  const double separate_norms = (m.mla ? 1 : 0) + (moe_layer ? 1 : 0);
  return separate_norms * lin * tokens * m.hidden_size;
}

// A dense MLP's internals, bytes: fc1 output(s) (b·gate) + activation output = fc2 input (lin), per
// element of T·ffn/t (Korthikanti et al. 2022: 8sbh + 8sbh for a GeLU MLP of 4h). --recompute-modules
// mlp checkpoints the whole dense MLP: both are dropped and re-run from its input (the pre-MLP
// norm's output, counted with the layer's replicated tensors); it does nothing to MoE layers
// (Megatron-Bridge SKILL.md: "mlp targets dense MLPs and is a no-op on MoE layers").
double dense_mlp_bytes(const ModelSpec& m, const ParallelConfig& p, double tokens, double lin) {
  if (p.recomputes(RecomputeModule::kMlp)) return 0;
  const double b = cost_detail::kActivationBytes, gate = m.gated_mlp ? 2 : 1;
  return (b * gate + lin) * tokens * (m.ffn_hidden_size / static_cast<double>(p.tp));
}

// An MoE block's internals, bytes, with R = T·top_k·etp/t·moe_load routed rows and fe the expert
// FFN width per expert-TP rank:
//   permuted expert inputs            lin·R·h
//   expert fc1 output(s)              b·gate·R·fe      (the activation's input)
//   expert activation output          lin·R·fe         (fc2's input)
//   router logits/probabilities       4·T/sp·E         (fp32)
//   shared experts' fc1 + activation  (b·gate + lin)·T·S/t, S = shared experts x their FFN width
// Megatron-Bridge docs/training/activation-recomputation.md and SKILL.md: moe_act drops the
// activation output "between grouped expert FC1 and FC2" (recomputed from the fc1 output, which
// stays); shared_experts re-runs the shared-expert MLP from its input; moe checkpoints "the whole
// MoE forward, including routing, expert compute, and communication", keeping only its input.
double moe_block_bytes(const ModelSpec& m, const ParallelConfig& p, double tokens, double lin, double moe_load) {
  if (p.recomputes(RecomputeModule::kMoe)) return 0;
  const MoeSpec& e = *m.moe;
  const double b = cost_detail::kActivationBytes, gate = m.gated_mlp ? 2 : 1;
  const double t = p.tp, sp_div = p.sequence_parallel ? t : 1, h = m.hidden_size;
  const double etp = p.expert_tp();
  const double routed_rows = tokens * e.top_k * etp / t * moe_load;
  const double fe_local = e.expert_ffn_hidden_size / etp;
  double bytes = lin * routed_rows * h;                           // permuted expert inputs
  bytes += b * gate * routed_rows * fe_local;                     // fc1 output(s)
  if (!p.recomputes(RecomputeModule::kMoeAct)) bytes += lin * routed_rows * fe_local;  // activation output
  bytes += 4 * tokens / sp_div * e.num_experts;                   // router logits/probabilities (fp32)
  if (e.num_shared_experts > 0 && !p.recomputes(RecomputeModule::kSharedExperts))
    bytes += (b * gate + lin) * tokens * (e.num_shared_experts * e.shared_ffn() / t);
  return bytes;
}

}  // namespace

// Megatron-Core's fine-grained activation offloading (pipeline_parallel/fine_grained_activation_
// offload.py at d98e8a64): a saved-tensors hook around each listed module moves every tensor the
// module saves for its backward, of at least min_offloaded_tensor_size elements (1,048,576 by
// default), to pinned host memory after the module's forward, on a side stream, and brings it back
// before the module's backward. Per module, the tensors it saves as this file counts them (T tokens
// of the micro-batch shard, sp = tp under sequence parallelism, b = 2, lin = the linear inputs'
// bytes, R routed rows, fe expert FFN width per expert-TP rank):
//   attn_norm   the input norm's input          b·T·h/sp    (MLA only: standard attention's norm
//                                                            is fused into the QKV linear)
//   qkv_linear  standard: the fused norm's input and the QKV input   (b + lin)·T·h/sp
//               MLA: the down-projections' input (unless layernorm is recomputed) lin·T·h/sp, and
//               the latent vectors lin·T·(q_lora + kv_lora + rope)/sp
//   core_attn   Q, K, V (each its own tensor), and what the attention kernel saves: flash, its
//               output (moved; its GPU tensor stays the projection's input); unfused, the s x s
//               scores. Nothing when core_attn is recomputed (attention.py runs the checkpointed
//               path without the offload context); Q, K, V moved but not freed again when MLA's
//               up-projections are recomputed (that checkpoint drops them anyway)
//   attn_proj   the projection's input             lin·T·heads/t·v
//   mlp_norm    the pre-MLP norm's input          b·T·h/sp    (MoE layers: dense MLPs fuse it)
//   expert_fc1  the permuted expert inputs         lin·R·h     (moved in BF16 unless MXFP8:
//               experts.py set_save_original_input keeps the unquantized input for the offload)
//   moe_act     the experts' fc1 output(s)          b·gate·R·fe
// (expert modules: nothing when the whole moe module is recomputed.)
OffloadBytes layer_offload_bytes(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                                 bool moe_layer, double linear_input_bytes, double moe_load) {
  OffloadBytes out;
  if (p.offload_modules == 0) return out;
  const double b = cost_detail::kActivationBytes, lin = linear_input_bytes;
  const double t = p.tp, sp_div = p.sequence_parallel ? t : 1, h = m.hidden_size;
  const double tokens = static_cast<double>(p.mbs) * training.seq_len / p.cp;
  const double heads_local = m.num_attention_heads / t;
  // One saved tensor of `elements` kept at `bytes` each on the GPU and moved at `moved_bytes`.
  auto tensor = [&](double elements, double bytes, double moved_bytes) {
    if (elements < kMinOffloadedTensorElements) return;
    out.freed += elements * bytes;
    out.moved += elements * moved_bytes;
  };
  auto tensor_kept = [&](double elements, double bytes) { tensor(elements, bytes, bytes); };
  const double shard = tokens * h / sp_div;
  if (p.offloads(OffloadModule::kAttnNorm) && m.mla) tensor_kept(shard, b);
  if (p.offloads(OffloadModule::kQkvLinear)) {
    if (m.mla) {
      const MlaSpec& a = *m.mla;
      if (!p.recomputes(RecomputeModule::kLayernorm)) tensor_kept(shard, lin);
      tensor_kept(tokens * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) / sp_div, lin);
    } else {
      tensor_kept(shard, b);
      tensor_kept(shard, lin);
    }
  }
  const double v_dim = m.mla ? m.mla->v_head_dim : m.head_size();
  if (p.offloads(OffloadModule::kCoreAttn) && !p.recomputes(RecomputeModule::kCoreAttn)) {
    // Q, K, V. MLA's up-projection checkpoint frees them anyway (multi_latent_attention.py releases
    // them after the offload): moved, not freed again.
    const double qkv_kept = m.mla && p.recomputes(RecomputeModule::kMlaUpProj) ? 0 : b;
    if (m.mla) {
      const MlaSpec& a = *m.mla;
      const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      tensor(tokens * heads_local * qk, qkv_kept, b);          // Q
      tensor(tokens * heads_local * qk, qkv_kept, b);          // K
      tensor(tokens * heads_local * a.v_head_dim, qkv_kept, b);  // V
    } else {
      const double kv_local = std::max(1.0, m.kv_heads() / t);
      tensor(tokens * heads_local * m.head_size(), qkv_kept, b);
      tensor(tokens * kv_local * m.head_size(), qkv_kept, b);
      tensor(tokens * kv_local * m.head_size(), qkv_kept, b);
    }
    if (training.flash_attention) {
      // The fused kernel saves its output too: a copy goes to the host, while the GPU tensor stays
      // the projection's input (freed by attn_proj's offload, below).
      tensor(tokens * heads_local * v_dim, 0, b);
    } else {
      // Unfused: the s x s scores (softmax output, with dropout its mask and output), 2 (5) bytes.
      tensor_kept(tokens * heads_local * training.seq_len, m.dropout ? 5 : 2);
    }
  }
  if (p.offloads(OffloadModule::kAttnProj)) tensor_kept(tokens * heads_local * v_dim, lin);
  if (!moe_layer) return out;
  if (p.offloads(OffloadModule::kMlpNorm)) tensor_kept(shard, b);
  if (p.recomputes(RecomputeModule::kMoe)) return out;
  const MoeSpec& e = *m.moe;
  const double gate = m.gated_mlp ? 2 : 1;
  const double routed_rows = tokens * e.top_k * p.expert_tp() / t * moe_load;
  const double fe_local = e.expert_ffn_hidden_size / static_cast<double>(p.expert_tp());
  if (p.offloads(OffloadModule::kExpertFc1)) {
    const bool original_input = training.precision == Precision::kFP8 && training.fp8_recipe != Fp8Recipe::kMxfp8;
    tensor(routed_rows * h, lin, original_input ? b : lin);
  }
  if (p.offloads(OffloadModule::kMoeAct))
    for (int g = 0; g < static_cast<int>(gate); ++g) tensor_kept(routed_rows * fe_local, b);
  return out;
}

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
  replicated -= layernorm_recompute_freed(m, p, moe_layer, tokens, lin);
  double sharded = 0;
  double qk_dim = m.head_size(), v_dim = m.head_size();
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
    replicated += lin * tokens * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim);  // latent vectors
    // Q, K, V: the up-projections' outputs after RoPE. --recompute-modules mla_up_proj drops them
    // and re-runs the up-projections from the latent vectors (kept above) in the backward
    // (Megatron-Bridge SKILL.md: "MLA Q/KV up-projection plus RoPE region ... retaining expanded
    // Q/K/V tensors").
    if (!p.recomputes(RecomputeModule::kMlaUpProj)) sharded += b * tokens * heads_local * (2 * qk_dim + v_dim);
  } else {
    const double kv_local = std::max(1.0, m.kv_heads() / t);
    sharded += b * tokens * (heads_local + 2 * kv_local) * m.head_size();  // Q, K, V (6sbh for MHA)
  }
  sharded += lin * tokens * heads_local * v_dim;  // attention output = projection input (2sbh)
  // Core attention's internals. Unfused: softmax output (2·a·s²·b) + dropout mask (a·s²·b) + dropout
  // output (2·a·s²·b), dropped by core_attn recompute (Korthikanti et al. 2022, Sec. 5), and by full
  // recompute as paratune has always counted it. Flash attention keeps only its softmax log-sum-exp
  // (fp32), also under core_attn recompute (< 1% of a layer; left as counted before the module list).
  const bool core_attention_kept = p.recompute == RecomputeMode::kNone ||
                                   (p.recompute == RecomputeMode::kSelective && !p.recomputes(RecomputeModule::kCoreAttn));
  if (!training.flash_attention && core_attention_kept) {
    sharded += (m.dropout ? 5 : 2) * heads_local * tokens * training.seq_len;
  } else if (training.flash_attention) {
    sharded += 4 * tokens * heads_local;  // softmax log-sum-exp statistics (fp32)
  }
  if (p.recompute == RecomputeMode::kSelective && training.per_op_selective_recompute && !moe_layer)
    return torchtitan_selective_bytes(m, p, tokens, qk_dim, v_dim);
  sharded += moe_layer ? moe_block_bytes(m, p, tokens, lin, moe_load) : dense_mlp_bytes(m, p, tokens, lin);
  return replicated / sp_div + sharded - layer_offload_bytes(m, training, p, moe_layer, lin, moe_load).freed;
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
  const int expert_dp = p.expert_data_parallel_size();
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
