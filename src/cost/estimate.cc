// The analytic iteration model. Reading order: GEMM/roofline helpers, one layer's costs, one
// stage's costs, the pipeline, data-parallel synchronisation, memory, and the totals.
#include "paratune/cost/estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "context_parallel.h"
#include "device.h"
#include "fp8.h"
#include "moe.h"
#include "paratune/cost/collectives.h"
#include "paratune/cost/model_stats.h"
#include "paratune/sim/schedule.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

using cost_detail::attention_kv_block_tokens;
using cost_detail::attention_rate_flops_per_s;
using cost_detail::bf16_gemm_s;
using cost_detail::Device;
using cost_detail::expert_data_parallel_size;
using cost_detail::Fp8Costs;
using cost_detail::gemm_s;
using cost_detail::kActivationBytes;

// Everything one layer costs for one micro-batch on one GPU.
struct LayerCost {
  double forward_compute_s = 0;
  double backward_compute_s = 0;
  double weight_grad_s = 0;          // the part of backward_compute_s that computes weight gradients
  double selective_recompute_s = 0;  // core-attention forward re-run (recompute=selective)
  double forward_flops = 0;          // executed on this GPU, forward
  double attention_forward_s = 0;
  double tp_forward_s = 0, tp_backward_s = 0;  // exposed
  double cp_forward_s = 0, cp_backward_s = 0;  // exposed
  double ep_forward_s = 0, ep_backward_s = 0;  // exposed
  // The forward's share of the interference (compute slowed by hidden communication), so that a
  // recompute re-runs it; the backward's share is in backward_compute_s.
  double interference_forward_s = 0;
  double params_dense = 0;   // non-expert parameters on this GPU
  double params_expert = 0;  // expert parameters on this GPU
  double activation_bytes = 0;
  double input_bytes = 0;  // the layer input kept under full recompute
  double cp_buffer_bytes = 0;  // ring attention's K/V send/receive buffers (a working set)
};

struct Context {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const TrainingSpec& training;
  const ParallelConfig& config;
  const Calibration& calibration;
  Device device;
  Fabric fabric;
  Fp8Costs fp8;
  double tokens;  // tokens of one micro-batch on one GPU's sequence shard: mbs * seq / cp
  double moe_load;  // busiest expert-parallel rank's tokens / the mean (cost/moe.h)
};


LayerCost layer_cost(const Context& c, bool moe_layer) {
  const ModelSpec& m = c.model;
  const ParallelConfig& p = c.config;
  const Device& d = c.device;
  const Calibration& cal = c.calibration;
  const double t = p.tp;
  const double tokens = c.tokens;
  const double h = m.hidden_size;
  const double heads_local = m.num_attention_heads / t;
  const double sp_div = p.sequence_parallel ? t : 1;
  LayerCost L;
  // Elements of the linear layers' GEMM inputs (forward) and output gradients (backward): FP8
  // recipes quantize each of them (cost/fp8.h).
  double linear_input_elements = 0, linear_output_elements = 0;

  // --- GEMMs of attention ------------------------------------------------------------------------
  double qk_dim = m.head_size(), v_dim = m.head_size(), attention_gemm_s = 0, attention_gemm_flops = 0;
  auto gemm = [&](double rows, double n, double k) {
    attention_gemm_flops += 2 * rows * n * k;
    linear_input_elements += rows * k;
    linear_output_elements += rows * n;
    return gemm_s(d, rows, n, k);
  };
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
    // Down-projections are replicated over TP; up-projections and W_O are split by heads.
    if (a.q_lora_rank > 0) attention_gemm_s += gemm(tokens, a.q_lora_rank, h) + gemm(tokens, heads_local * qk_dim, a.q_lora_rank);
    else attention_gemm_s += gemm(tokens, heads_local * qk_dim, h);
    attention_gemm_s += gemm(tokens, a.kv_lora_rank + a.qk_rope_head_dim, h) +
                        gemm(tokens, heads_local * (a.qk_nope_head_dim + v_dim), a.kv_lora_rank);
    attention_gemm_s += gemm(tokens, h, heads_local * v_dim);
  } else {
    const double kv_local = std::max(1.0, m.kv_heads() / t);  // tp > kv_heads replicates KV heads
    attention_gemm_s += gemm(tokens, (heads_local + 2 * kv_local) * m.head_size(), h);
    attention_gemm_s += gemm(tokens, h, heads_local * m.head_size());
  }

  // --- Core attention (BF16 under every FP8 recipe: cost/fp8.h) ----------------------------------
  // Scores and values: 2·tokens·seq·(qk + v)·heads FLOPs forward. Flash attention skips the masked
  // half of a causal mask (Dao 2023, FlashAttention-2 Sec. 3.1.1) and runs slower on short key
  // blocks (context parallelism shortens them: cost/context_parallel.h); unfused attention
  // computes the whole mask and writes s^2 scores to HBM (softmax, optional dropout: ~8-12 bytes
  // per score).
  const double seq = c.training.seq_len;
  const bool flash = c.training.flash_attention;
  const double causal_factor = (m.causal && flash) ? 0.5 : 1.0;
  const double attention_flops = 2 * tokens * seq * (qk_dim + v_dim) * heads_local * causal_factor;
  double attention_s =
      attention_flops / attention_rate_flops_per_s(d, attention_kv_block_tokens(p.cp, seq, m.causal && flash));
  if (!flash) {
    // Unfused: two batched GEMMs per head, (seq x seq x head_dim), at the GEMM rate, plus the
    // scores' round trips through HBM.
    const double f = (seq / (seq + d.half_dim)) * (seq / (seq + d.half_dim)) *
                     (qk_dim / (qk_dim + d.half_dim));
    attention_s = attention_flops / (d.bf16_peak_flops_per_s * d.bf16_efficiency_max * f) +
                  tokens * seq * heads_local * (m.dropout ? 12 : 8) / d.hbm_bytes_per_s;
  }
  L.attention_forward_s = attention_s;
  // Flash backward runs 5 matmuls against the forward's 2 (recomputes the scores): 2.5x.
  const double attention_backward_s = attention_s * (flash ? 2.5 : 2.0);

  // --- MLP or experts ----------------------------------------------------------------------------------
  double mlp_s = 0, mlp_flops = 0;
  const double gate = m.gated_mlp ? 2 : 1;
  double activation_elements = 0;  // elements of the MLP hidden activation (for memory-bound ops)
  auto mlp = [&](double rows, double ffn_local) {
    mlp_flops += 2 * rows * ffn_local * h * (gate + 1);
    activation_elements += rows * ffn_local;
    linear_input_elements += rows * (h + ffn_local);
    linear_output_elements += rows * (gate * ffn_local + h);
    return gemm_s(d, rows, gate * ffn_local, h) + gemm_s(d, rows, h, ffn_local);
  };
  const LayerParams lp = layer_params(m, moe_layer);
  double moe_permute_bytes = 0;
  if (moe_layer) {
    const MoeSpec& e = *m.moe;
    const double etp = p.expert_tp();
    const double local_experts = static_cast<double>(e.num_experts) / p.ep;
    // Each token visits top_k experts; with expert-TP = etp the routed rows on one GPU are
    // tokens·top_k·etp/tp, spread over its local experts; the busiest rank gets moe_load x that
    // (cost/moe.h), and a synchronous step waits for it.
    const double routed_rows = tokens * e.top_k * etp / t * c.moe_load;
    const double rows_per_expert = routed_rows / local_experts;
    const double fe_local = e.expert_ffn_hidden_size / etp;
    mlp_s += local_experts * (gemm_s(d, rows_per_expert, gate * fe_local, h) + gemm_s(d, rows_per_expert, h, fe_local));
    mlp_flops += 2 * routed_rows * fe_local * h * (gate + 1);
    activation_elements += routed_rows * fe_local;
    linear_input_elements += routed_rows * (h + fe_local);
    linear_output_elements += routed_rows * (gate * fe_local + h);
    mlp_s += bf16_gemm_s(d, tokens / sp_div, e.num_experts, h);  // router (BF16/FP32 in every recipe)
    mlp_flops += 2 * tokens / sp_div * e.num_experts * h;
    if (e.num_shared_experts > 0) mlp_s += mlp(tokens, e.num_shared_experts * e.shared_ffn() / t);
    moe_permute_bytes = 4 * routed_rows * h * kActivationBytes;  // permute + unpermute, read + write
    L.params_expert = e.num_experts * lp.routed_expert / (p.ep * etp);
  } else {
    mlp_s += mlp(tokens, m.ffn_hidden_size / t);
  }
  L.params_dense = lp.non_expert() / t;

  // --- Memory-bound element-wise kernels (bytes read + written, forward) --------------------------
  // Two norms (r+w), two residual adds (2r+w), dropout (r+w+mask), RoPE on q and k, the MLP
  // activation (gated: 2r+w, else r+w), MoE token permutation. Backward moves about twice as much.
  // FP8: each linear layer's input is quantized forward and its output gradient backward
  // (cast_bytes_per_element each, cost/fp8.h).
  const double hidden_elements = tokens * h / sp_div;
  double elementwise_bytes = kActivationBytes * (2 * 2 + 2 * 3) * hidden_elements;
  if (m.dropout) elementwise_bytes += 2 * 2.5 * kActivationBytes * hidden_elements;
  if (m.position_embedding == PositionEmbedding::kRotary)
    elementwise_bytes += 2 * kActivationBytes * tokens * (heads_local + std::max(1.0, m.kv_heads() / t)) * qk_dim;
  elementwise_bytes += kActivationBytes * (gate + 1) * activation_elements + moe_permute_bytes;
  const double elementwise_s = elementwise_bytes / d.hbm_bytes_per_s;
  const double cast_forward_s = c.fp8.cast_bytes_per_element * linear_input_elements / d.hbm_bytes_per_s;
  const double cast_backward_s = c.fp8.cast_bytes_per_element * linear_output_elements / d.hbm_bytes_per_s;

  const double overhead = cal.layer_overhead_s;
  L.forward_compute_s = attention_gemm_s + attention_s + mlp_s + elementwise_s + cast_forward_s + overhead;
  // Backward: input-gradient and weight-gradient GEMMs (2x forward), attention 2-2.5x.
  L.backward_compute_s =
      2 * (attention_gemm_s + mlp_s + elementwise_s + overhead) + attention_backward_s + cast_backward_s;
  // Of which the weight-gradient GEMMs (dW = X^T dY, one per forward GEMM) are the W pass of a
  // zero-bubble schedule; the input gradients, attention and element-wise backward are its B pass.
  L.weight_grad_s = attention_gemm_s + mlp_s;
  L.selective_recompute_s = attention_s;
  L.forward_flops = attention_gemm_flops + attention_flops + mlp_flops;

  // Communication hidden behind compute slows that compute by overlap_interference x its time
  // (NCCL kernels take SMs and HBM bandwidth). Collected per pass, added at the end.
  double hidden_forward_s = 0, hidden_backward_s = 0;

  // --- Tensor-parallel communication --------------------------------------------------------------
  // Megatron-LM (Shoeybi et al. 2019, Sec. 3): two all-reduces of the b·s·h activation forward
  // (after attention and after the MLP) and two backward; with sequence parallelism each becomes a
  // reduce-scatter + all-gather pair of the same volume (Korthikanti et al. 2022, Sec. 4.2.2).
  const GroupPlacement tp_group = place_group(p.tp, 1, c.cluster);
  const double activation_message = tokens * h * kActivationBytes;
  const double tp_comm = 2 * all_reduce_s(activation_message, tp_group, c.fabric);
  const double tp_hidden = p.tp_comm_overlap ? cal.tp_overlap : 0.0;
  L.tp_forward_s = tp_comm * (1 - tp_hidden);
  L.tp_backward_s = L.tp_forward_s;
  hidden_forward_s += tp_comm * tp_hidden;
  hidden_backward_s += tp_comm * tp_hidden;

  // --- Context-parallel ring attention (cost/context_parallel.h) --------------------------------
  if (p.cp > 1) {
    const GroupPlacement cp_group = place_group(p.cp, p.tp, c.cluster);
    const double kv_heads_local = m.mla ? heads_local : std::max(1.0, m.kv_heads() / t);
    const double kv_bytes = tokens * kv_heads_local * (qk_dim + v_dim) * kActivationBytes;
    const cost_detail::RingAttentionCost ring = cost_detail::ring_attention_cost(
        d, {.cp = p.cp,
            .seq_len = seq,
            .causal = m.causal,
            .tokens = tokens,
            .heads = heads_local,
            .kv_heads = kv_heads_local,
            .qk_dim = qk_dim,
            .v_dim = v_dim,
            .attention_forward_s = attention_s,
            .attention_backward_s = attention_backward_s,
            .kv_step_s = p2p_s(kv_bytes, group_link(cp_group, c.fabric))});
    L.forward_compute_s += ring.extra_forward_s;
    L.backward_compute_s += ring.extra_backward_s;
    L.selective_recompute_s += ring.extra_forward_s;
    L.cp_forward_s = ring.exposed_forward_s;
    L.cp_backward_s = ring.exposed_backward_s;
    // Split the hidden transfers as the kernels that hide them: 1 : 2.5.
    hidden_forward_s += ring.hidden_s / 3.5;
    hidden_backward_s += ring.hidden_s * 2.5 / 3.5;
    L.cp_buffer_bytes = ring.buffer_bytes;
  }

  // --- Expert-parallel all-to-all -------------------------------------------------------------------
  // Dispatch and combine forward, and the same two backward (GShard, Lepikhin et al. 2020); each
  // rank sends its tokens' top_k copies of the hidden state, the busiest receives moe_load x the
  // mean. Megatron-Core orders expert ranks etp innermost, then ep, so an EP group's members are
  // etp ranks apart (parallel_state.py, expert mesh "tp-ep-dp-pp" with tp = etp).
  if (moe_layer && p.ep > 1) {
    const GroupPlacement ep_group = place_group(p.ep, p.expert_tp(), c.cluster);
    const double a2a =
        all_to_all_s(tokens * m.moe->top_k * h * kActivationBytes / t * c.moe_load, ep_group, c.fabric);
    double exposed = 4 * a2a;
    if (p.ep_overlap) {
      // Megatron-Core's 1F1B A2A overlap: one micro-batch's dispatch/combine runs under another's
      // forward/backward compute of the same layer; ep_overlap of that compute can hide it.
      const double window = cal.ep_overlap * (L.forward_compute_s + L.backward_compute_s);
      exposed = std::max(0.0, 4 * a2a - window);
      hidden_forward_s += (4 * a2a - exposed) / 3;
      hidden_backward_s += (4 * a2a - exposed) * 2 / 3;
    }
    L.ep_forward_s = exposed / 2;
    L.ep_backward_s = exposed / 2;
  }

  L.interference_forward_s = cal.overlap_interference * hidden_forward_s;
  L.forward_compute_s += L.interference_forward_s;
  L.backward_compute_s += cal.overlap_interference * hidden_backward_s;

  L.activation_bytes = layer_activation_bytes(m, c.training, p, moe_layer, c.fp8.saved_input_bytes, c.moe_load);
  L.input_bytes = kActivationBytes * hidden_elements;
  return L;
}

// Number of MoE layers among decoder layers [0, end).
int moe_layers_below(const ModelSpec& m, int end) {
  if (!m.moe || end <= m.moe->first_dense_layers) return 0;
  const int span = end - m.moe->first_dense_layers;
  return (span + m.moe->layer_freq - 1) / m.moe->layer_freq;
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
  const double b = kActivationBytes, lin = linear_input_bytes;
  double replicated = (2 * b + lin + lin) * tokens * h;  // two LN inputs, QKV input, MLP input
  if (m.dropout) replicated += 2 * 1 * tokens * h;        // residual dropout masks, 1 byte each
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

namespace {

// Megatron-LM's gradient bucket: max(40M, 1M x dp) parameters (DistributedDataParallelConfig).
double grad_bucket_params(const ParallelConfig& p) { return std::max(40e6, 1e6 * p.dp); }

// One model chunk (a pipeline rank's share of layers, 1/v of it with interleaving) for one
// micro-batch: compute, exposed communication, parameters and activation memory.
struct ChunkPart {
  double forward_s = 0, backward_s = 0, weight_grad_s = 0;  // compute
  double recompute_s = 0, recompute_flops = 0;
  // Full recompute re-runs the forward's exposed communication too, by kind.
  double recompute_tp_s = 0, recompute_cp_s = 0, recompute_ep_s = 0;
  double tp_forward_s = 0, tp_backward_s = 0, cp_forward_s = 0, cp_backward_s = 0, ep_forward_s = 0,
         ep_backward_s = 0;
  double dense_params = 0, expert_params = 0;  // on one GPU, TP/EP-sharded, before ZeRO
  double kept_bytes = 0;                       // activations kept from forward to backward
  double recompute_bytes = 0;                  // working set of the layer being recomputed
  int layers = 0, recomputed_layers = 0;

  // A rank's total over its chunks (the recompute working set is one layer's, not a sum).
  ChunkPart& operator+=(const ChunkPart& q) {
    forward_s += q.forward_s;
    backward_s += q.backward_s;
    weight_grad_s += q.weight_grad_s;
    recompute_s += q.recompute_s;
    recompute_tp_s += q.recompute_tp_s;
    recompute_cp_s += q.recompute_cp_s;
    recompute_ep_s += q.recompute_ep_s;
    recompute_flops += q.recompute_flops;
    tp_forward_s += q.tp_forward_s;
    tp_backward_s += q.tp_backward_s;
    cp_forward_s += q.cp_forward_s;
    cp_backward_s += q.cp_backward_s;
    ep_forward_s += q.ep_forward_s;
    ep_backward_s += q.ep_backward_s;
    dense_params += q.dense_params;
    expert_params += q.expert_params;
    kept_bytes += q.kept_bytes;
    recompute_bytes = std::max(recompute_bytes, q.recompute_bytes);
    layers += q.layers;
    recomputed_layers += q.recomputed_layers;
    return *this;
  }
  // Passes of one micro-batch incl. exposed TP/CP/EP communication (ZeRO-3 traffic comes on top).
  [[nodiscard]] double forward_with_comm_s() const { return forward_s + tp_forward_s + cp_forward_s + ep_forward_s; }
  [[nodiscard]] double recompute_comm_s() const { return recompute_tp_s + recompute_cp_s + recompute_ep_s; }
  [[nodiscard]] double backward_with_comm_s() const {
    return backward_s + recompute_s + tp_backward_s + cp_backward_s + ep_backward_s + recompute_comm_s();
  }
};

// Bytes per parameter held and moved, by precision and optimizer.
struct ParamBytes {
  double grad;             // fp32 main_grad (Megatron) or bf16
  double weight;           // bf16 (+ fp8 copy)
  double optimizer;        // fp32 master (+ momentum) (+ variance)
  double optimizer_traffic;  // read + written by one optimizer step
};

ParamBytes param_bytes(const TrainingSpec& training, const Fp8Costs& fp8) {
  return ParamBytes{
      .grad = training.fp32_grad_accumulation ? 4.0 : 2.0,
      // BF16 weights, plus the FP8 copies an FP8 recipe caches across micro-batches (cost/fp8.h).
      .weight = fp8.weight_bytes,
      .optimizer = training.optimizer == Optimizer::kSGD ? 8.0 : 12.0,
      // Adam reads+writes master, m, v (24), reads the fp32 grad (4), writes the bf16 weight (2);
      // SGD with momentum: 16 + 4 + 2. FP8: the new weights are cast once per iteration (read 2,
      // write the FP8 copies).
      .optimizer_traffic = (training.optimizer == Optimizer::kSGD ? 22.0 : 30.0) +
                           (fp8.linear_in_fp8 ? fp8.weight_bytes : 0.0)};
}

// Optimizer-state sharding: dense parameters over op x cp ranks (cp ranks hold the same weights),
// expert parameters over their share of the expert-data-parallel group (Megatron-Core's size,
// cost/moe.h: dp·cp·tp/(etp·ep), larger than dp·cp/ep when etp < tp).
struct ShardDegrees {
  int expert_dp;
  double dense;
  double expert;
};

ShardDegrees shard_degrees(const ParallelConfig& p) {
  const int expert_dp = expert_data_parallel_size(p);
  return ShardDegrees{expert_dp, p.zero > 0 ? static_cast<double>(p.op) * p.cp : 1,
                      p.zero > 0 ? std::max(1.0, static_cast<double>(expert_dp) * p.op / p.dp) : 1};
}

// A rank's memory without activations: weights, gradients and optimizer state of its parameters
// under ZeRO sharding (Rajbhandari et al. 2020), the fixed buffers and the last stage's logits.
// `buffer_bytes`: the configuration's fixed buffers (StageCostModel::Impl::buffer_bytes).
MemoryBreakdown static_memory(const ParallelConfig& p, const ParamBytes& bytes, const ShardDegrees& shards,
                              double buffer_bytes, double dense_params, double expert_params,
                              double largest_layer_params, double logits_bytes) {
  MemoryBreakdown mem;
  const double params = dense_params + expert_params;
  const double sharded_params = dense_params / shards.dense + expert_params / shards.expert;
  mem.weights_bytes = bytes.weight * (p.zero == 3 ? sharded_params : params);
  if (p.zero == 3) mem.weights_bytes += 2 * 2 * largest_layer_params;  // two layers gathered (current + prefetched)
  mem.grads_bytes = bytes.grad * (p.zero >= 2 ? sharded_params : params);
  mem.optimizer_bytes = bytes.optimizer * (p.zero >= 1 ? sharded_params : params);
  mem.other_bytes = buffer_bytes + logits_bytes;
  return mem;
}

// A pipeline rank as estimate() needs it: the replay's input and the report's per-stage figures.
struct RankCost {
  sim::StageCost sim;
  StageEstimate estimate;  // memory without activations
  double tp_s = 0, cp_s = 0, ep_s = 0, zero3_s = 0;  // exposed per micro-batch
  double kept_bytes = 0, recompute_bytes = 0, recompute_flops = 0;
};

}  // namespace

// Everything about one configuration that does not depend on which layers a stage holds.
struct StageCostModel::Impl {
  ParallelConfig config;  // resolved
  EstimateOptions options;
  Fp8Costs fp8;  // what the precision costs (cost/fp8.h); before `c`, which is built from it
  Context c;
  int microbatches = 0;
  LayerCost dense, moe;
  ParamCounts counts;
  ParamBytes bytes;
  ShardDegrees shards;
  GroupPlacement dense_shard_group, dense_replica_group, expert_shard_group, expert_replica_group;
  double sp_div = 1, vocab_local = 0;
  // Fixed per-GPU buffers: CUDA context and workspaces, communication staging, NCCL's buffers for
  // each communicator this rank uses, ring attention's K/V buffers.
  double buffer_bytes = 0;

  Impl(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training, const ParallelConfig& requested,
       const Calibration& cal, const EstimateOptions& opts)
      : config(resolve(requested, model, cluster, training)),
        options(opts),
        fp8(cost_detail::fp8_costs(cluster.gpu, training, cal)),
        c{model,
          cluster,
          training,
          config,
          cal,
          device_for(cluster, training, cal, fp8),
          make_fabric(cluster, cal.intra_node_bandwidth_efficiency, cal.inter_node_bandwidth_efficiency),
          fp8,
          static_cast<double>(config.mbs) * training.seq_len / config.cp,
          model.moe ? cost_detail::moe_rank_load_factor(*model.moe, config, training, cal) : 1.0},
        microbatches(config.num_microbatches(training)),
        dense(layer_cost(c, false)),
        counts(count_parameters(model)),
        bytes(param_bytes(training, c.fp8)),
        shards(shard_degrees(config)) {
    if (model.moe) moe = layer_cost(c, true);
    const ParallelConfig& p = config;
    const ClusterSpec& gpn = cluster;  // groups are placed on the cluster's NVLink domains and pods
    dense_shard_group = place_group(static_cast<int>(shards.dense), p.tp, gpn);
    dense_replica_group = place_group(p.zero > 0 ? p.dp / p.op : p.dp * p.cp, p.tp * static_cast<int>(shards.dense), gpn);
    // Expert data-parallel groups: Megatron-Core's expert mesh orders etp, ep, edp, pp, so an edp
    // group's members are etp·ep ranks apart.
    const int expert_stride = p.expert_tp() * p.ep;
    expert_shard_group = place_group(static_cast<int>(shards.expert), expert_stride, gpn);
    expert_replica_group = place_group(p.zero > 0 ? static_cast<int>(shards.expert_dp / shards.expert) : shards.expert_dp,
                                       expert_stride * static_cast<int>(shards.expert), gpn);
    sp_div = p.sequence_parallel ? p.tp : 1;
    vocab_local = static_cast<double>(model.vocab_size) / p.tp;
    buffer_bytes = buffer_bytes_for(p);
  }

  // The fixed buffers of configuration `q` (which shares this model's layer shape).
  double buffer_bytes_for(const ParallelConfig& q) const {
    const Calibration& cal = c.calibration;
    return cal.cuda_context_bytes + cal.comm_buffer_bytes +
           communicators(q, c.model.moe.has_value()) * cal.nccl_bytes_per_communicator +
           std::max(dense.cp_buffer_bytes, moe.cp_buffer_bytes);
  }

  // The rates of this GPU: linear layers at the precision's peak (FP8 under an FP8 recipe),
  // attention and the output layer at the BF16/FP16 peak (cost/fp8.h). Per-step jitter: every
  // synchronising step waits for the slowest of the N GPUs, E[max of N normal] ~ mean x (1 + cv
  // sqrt(2 ln N)) (extreme-value asymptotics of the normal; "The Tail at Scale", Dean & Barroso
  // 2013, for why the slowest sets the pace), applied as a slowdown of every kernel.
  static Device device_for(const ClusterSpec& cluster, const TrainingSpec& training, const Calibration& cal,
                           const Fp8Costs& fp8) {
    const GpuSpec& gpu = cluster.gpu;
    const Precision high = training.precision == Precision::kFP8 ? Precision::kBF16 : training.precision;
    const double n = cluster.num_gpus();
    const double slowdown = 1 + (n > 1 ? cal.step_jitter_cv * std::sqrt(2 * std::log(n)) : 0.0);
    const double efficiency = cal.gemm_efficiency_for(gpu.name);
    const double bf16_peak = gpu.peak_flops_per_s(high) / slowdown;
    return Device{.linear_peak_flops_per_s = fp8.linear_peak_flops_per_s / slowdown,
                  .linear_efficiency_max = efficiency * fp8.linear_efficiency_factor,
                  .bf16_peak_flops_per_s = bf16_peak,
                  .bf16_efficiency_max = efficiency,
                  .half_dim = cal.gemm_half_efficiency_dim,
                  .attention_flops_per_s = bf16_peak * cal.attention_efficiency_for(gpu.name),
                  .attention_half_kv_tokens = cal.attention_half_kv_tokens,
                  .hbm_bytes_per_s = gpu.hbm_bandwidth_bytes_per_s * cal.hbm_efficiency / slowdown};
  }

  // NCCL communicators one rank uses: tensor, context and data parallel (dp x cp), expert and
  // expert-data parallel, the pipeline's neighbours and, with tied embeddings across stages, the
  // embedding group. Each holds its own buffers (Calibration::nccl_bytes_per_communicator).
  static int communicators(const ParallelConfig& p, bool moe) {
    int n = 0;
    if (p.tp > 1) n++;
    if (p.cp > 1) n++;
    if (p.dp * p.cp > 1) n++;
    if (p.pp > 1) n += 2;  // send to the next rank, receive from the previous one
    if (moe && p.ep > 1) n++;
    if (moe && expert_data_parallel_size(p) > 1) n++;
    return n;
  }

  // Decoder layers [first_layer, first_layer + layers) as one chunk, `recomputed` of them fully
  // recomputed; `first`/`last`: the chunk holds the embedding / the output layer and loss.
  ChunkPart chunk(int first_layer, int layers, int recomputed, bool first, bool last) const {
    const ModelSpec& model = c.model;
    const ParallelConfig& p = config;
    const Device& d = c.device;
    const double t = p.tp, h = model.hidden_size;
    ChunkPart part;
    part.layers = layers;
    part.recomputed_layers = recomputed;
    const int n_moe = moe_layers_below(model, first_layer + layers) - moe_layers_below(model, first_layer);
    const int n_dense = layers - n_moe;
    // Recomputed layers are taken from the dense ones first (they are the cheaper kind to redo).
    const int rc_dense = std::min(recomputed, n_dense);
    const int rc_moe = recomputed - rc_dense;
    auto sum = [&](double LayerCost::*field) { return n_dense * dense.*field + n_moe * moe.*field; };
    part.forward_s = sum(&LayerCost::forward_compute_s);
    part.backward_s = sum(&LayerCost::backward_compute_s);
    part.weight_grad_s = sum(&LayerCost::weight_grad_s);
    // Full recompute re-runs the forward (and its TP/CP/EP communication) before the backward.
    part.recompute_s = rc_dense * dense.forward_compute_s + rc_moe * moe.forward_compute_s;
    part.recompute_tp_s = rc_dense * dense.tp_forward_s + rc_moe * moe.tp_forward_s;
    part.recompute_cp_s = rc_dense * dense.cp_forward_s + rc_moe * moe.cp_forward_s;
    part.recompute_ep_s = rc_dense * dense.ep_forward_s + rc_moe * moe.ep_forward_s;
    part.recompute_flops = rc_dense * dense.forward_flops + rc_moe * moe.forward_flops;
    if (p.recompute == RecomputeMode::kSelective) {
      part.recompute_s += sum(&LayerCost::selective_recompute_s);
      part.recompute_flops += d.attention_flops_per_s * sum(&LayerCost::selective_recompute_s);
    }
    // Embedding on the first virtual stage (a lookup: memory-bound; its gradient is a weight
    // gradient); output layer and loss on the last: logits GEMM (tokens x V/t x h) and a fused
    // softmax cross-entropy over fp32 logits.
    if (first) {
      part.forward_s += kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
      part.backward_s += 3 * kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
      part.weight_grad_s += 3 * kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
    }
    if (last) {
      const double head = bf16_gemm_s(d, c.tokens, vocab_local, h);  // BF16 under every FP8 recipe
      const double loss = c.tokens * vocab_local * (kActivationBytes + 4 + 4) / d.hbm_bytes_per_s;
      part.forward_s += head + loss;
      part.backward_s += 2 * head + loss;
      part.weight_grad_s += head;
    }
    part.tp_forward_s = sum(&LayerCost::tp_forward_s);
    part.tp_backward_s = sum(&LayerCost::tp_backward_s);
    part.cp_forward_s = sum(&LayerCost::cp_forward_s);
    part.cp_backward_s = sum(&LayerCost::cp_backward_s);
    part.ep_forward_s = sum(&LayerCost::ep_forward_s);
    part.ep_backward_s = sum(&LayerCost::ep_backward_s);
    part.dense_params = sum(&LayerCost::params_dense);
    part.expert_params = sum(&LayerCost::params_expert);
    if (first) part.dense_params += counts.embedding / t;
    if (last) {
      part.dense_params += (counts.output_layer + h) / t;
      if (model.tie_embeddings && p.pp > 1) part.dense_params += static_cast<double>(model.vocab_size) * h / t;
    }
    // Full recompute keeps only each recomputed layer's input; the others keep everything. The
    // layer being recomputed holds its full activations while its backward runs.
    part.kept_bytes = (n_dense - rc_dense) * dense.activation_bytes + (n_moe - rc_moe) * moe.activation_bytes +
                      rc_dense * dense.input_bytes + rc_moe * moe.input_bytes +
                      (first ? kActivationBytes * c.tokens * h / sp_div : 0);
    if (recomputed > 0)
      part.recompute_bytes = std::max(rc_dense > 0 ? dense.activation_bytes : 0, rc_moe > 0 ? moe.activation_bytes : 0);
    return part;
  }

  // Recomputed layers of a rank spread over its v chunks, earlier chunks first.
  int recomputed_in_chunk(int recomputed, int chunk) const {
    return recomputed / config.vpp + (chunk < recomputed % config.vpp ? 1 : 0);
  }
  // The same split over chunks of unequal sizes (Megatron's embedding-/loss-aware split leaves the
  // first and last chunks a layer short): each chunk's share capped at its layers, what a short
  // chunk cannot take going to the next chunks with room.
  std::vector<int> recomputed_per_chunk(int recomputed, const std::vector<int>& chunk_layers) const {
    std::vector<int> out(chunk_layers.size());
    int left = recomputed;
    for (std::size_t ch = 0; ch < out.size(); ++ch) {
      out[ch] = std::min(chunk_layers[ch], recomputed_in_chunk(recomputed, static_cast<int>(ch)));
      left -= out[ch];
    }
    for (std::size_t ch = 0; ch < out.size() && left > 0; ++ch) {
      const int more = std::min(left, chunk_layers[ch] - out[ch]);
      out[ch] += more;
      left -= more;
    }
    return out;
  }

  // ZeRO-3: gather each layer's parameters forward and backward, reduce-scatter its gradients,
  // every micro-batch (FSDP FULL_SHARD; Zhao et al. 2023). Prefetch hides it behind the layer's
  // compute; the first layer's gather is always exposed. Returns the exposed {forward, backward}.
  // Neither part falls by more than hide x the compute a layer adds (hide <= 1), so a stage's time
  // never falls when it holds more layers: the stage assignment relies on that
  // (plan/stage_assignment.cc).
  //
  // ZeRO-2 keeps only its gradient shard, so with gradient accumulation it reduce-scatters every
  // micro-batch's gradients during that micro-batch's backward (DeepSpeed stage 2's
  // reduce_ipg_grads after each backward; FSDP SHARD_GRAD_OP without no_sync), not once per
  // iteration as Megatron's distributed optimizer (ZeRO-1) does: the backward part only.
  // What is hidden slows the compute it hides behind by overlap_interference x its time, added to
  // the exposed part (the kept part still falls with compute, by (1 - interference) x hide).
  std::pair<double, double> zero3_exposed_s(const ChunkPart& rank_total) const {
    if (config.zero < 2) return {0, 0};
    const double interference = c.calibration.overlap_interference;
    const double scatter = reduce_scatter_s(rank_total.dense_params * bytes.grad, dense_shard_group, c.fabric) +
                           reduce_scatter_s(rank_total.expert_params * bytes.grad, expert_shard_group, c.fabric);
    if (config.zero == 2) {
      const double hide_scatter = config.overlap_grad_reduce ? c.calibration.dp_overlap : 0;
      const double exposed = std::max(0.0, scatter - hide_scatter * rank_total.backward_s);
      return {0, exposed + interference * (scatter - exposed)};
    }
    const double gather_bytes = c.fp8.param_gather_bytes;
    const double gather = all_gather_s(rank_total.dense_params * gather_bytes, dense_shard_group, c.fabric) +
                          all_gather_s(rank_total.expert_params * gather_bytes, expert_shard_group, c.fabric);
    const double hide = config.overlap_param_gather ? c.calibration.dp_overlap : 0;
    // The first layer's own gather (latency included): nothing runs before it to hide it behind.
    const LayerCost& largest = model_has_larger_moe_layers() ? moe : dense;
    const double first_gather = all_gather_s(largest.params_dense * gather_bytes, dense_shard_group, c.fabric) +
                                all_gather_s(largest.params_expert * gather_bytes, expert_shard_group, c.fabric);
    const double forward = std::max(first_gather, gather - hide * rank_total.forward_s);
    const double backward = std::max(first_gather, gather + scatter - hide * rank_total.backward_s);
    return {forward + interference * std::max(0.0, gather - forward), backward + interference * std::max(0.0, gather + scatter - backward)};
  }

  bool model_has_larger_moe_layers() const {
    return c.model.moe && moe.params_dense + moe.params_expert > dense.params_dense + dense.params_expert;
  }
  double largest_layer_params() const {
    const LayerCost& largest = model_has_larger_moe_layers() ? moe : dense;
    return largest.params_dense + largest.params_expert;
  }
  // fp32 logits and their gradient on the last stage: tokens x V/t x (2 + 4) bytes.
  double logits_bytes(int rank) const { return rank == config.pp - 1 ? c.tokens * vocab_local * 6 : 0; }

  RankCost rank_cost(int s, const std::vector<ChunkPart>& parts) const;

  // planning_bounds' per-group ingredients, computed on first use (one model serves one thread).
  struct BoundBasis;
  BoundBasis& bound_basis() const;
  mutable std::unique_ptr<BoundBasis> basis;
};

// Pipeline rank `s` made of `parts` (one per model chunk): its costs per micro-batch, its
// once-per-iteration data-parallel work and its memory without activations.
RankCost StageCostModel::Impl::rank_cost(int s, const std::vector<ChunkPart>& parts) const {
  const ParallelConfig& p = config;
  const Calibration& cal = c.calibration;
  const ClusterSpec& cluster = c.cluster;
  const int v = p.vpp;
  RankCost out;
  StageEstimate& st = out.estimate;
  sim::StageCost& sc = out.sim;
  ChunkPart total;
  for (const ChunkPart& q : parts) total += q;
  st.layers = total.layers;
  st.recomputed_layers = total.recomputed_layers;
  const double dense_params = total.dense_params, expert_params = total.expert_params;
  st.params = dense_params + expert_params;

  const auto [zero3_forward_s, zero3_backward_s] = zero3_exposed_s(total);
  double grad_sync = 0, param_gather = 0;
  if (p.zero >= 2) {
    // The gradients were reduce-scattered every micro-batch (zero3_exposed_s); across replicas
    // (op < dp, hybrid sharding) one all-reduce of the gradient shard remains.
    grad_sync = all_reduce_s(dense_params * bytes.grad / shards.dense, dense_replica_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad / shards.expert, expert_replica_group, c.fabric);
    // ZeRO-2 keeps whole parameters: the updated shards are all-gathered after the step.
    if (p.zero == 2)
      param_gather = all_gather_s(dense_params * c.fp8.param_gather_bytes, dense_shard_group, c.fabric) +
                     all_gather_s(expert_params * c.fp8.param_gather_bytes, expert_shard_group, c.fabric);
  } else if (p.zero == 0) {
    // --- Data-parallel gradient synchronisation once per iteration ------------------------------
    // ZeRO-0: all-reduce the gradients over dp x cp.
    grad_sync = all_reduce_s(dense_params * bytes.grad, dense_replica_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad, expert_replica_group, c.fabric);
  } else {
    // ZeRO-1 (Rajbhandari et al. 2020; Megatron's distributed optimizer, which keeps the whole
    // gradient buffer and reduces it once per iteration): reduce-scatter over the shard group,
    // all-reduce the shard across replicas, all-gather the updated parameters (bf16, or FP8 with
    // fp8_param_gather).
    grad_sync = reduce_scatter_s(dense_params * bytes.grad, dense_shard_group, c.fabric) +
                all_reduce_s(dense_params * bytes.grad / shards.dense, dense_replica_group, c.fabric) +
                reduce_scatter_s(expert_params * bytes.grad, expert_shard_group, c.fabric) +
                all_reduce_s(expert_params * bytes.grad / shards.expert, expert_replica_group, c.fabric);
    param_gather = all_gather_s(dense_params * c.fp8.param_gather_bytes, dense_shard_group, c.fabric) +
                   all_gather_s(expert_params * c.fp8.param_gather_bytes, expert_shard_group, c.fabric);
  }
  // The parameter all-gather overlaps the next iteration's forward (overlap-param-gather); what
  // is left is exposed after the optimizer step.
  sc.param_gather_s =
      p.overlap_param_gather ? std::max(0.0, param_gather - cal.dp_overlap * total.forward_s) : param_gather;
  const double owned_params = dense_params / shards.dense + expert_params / shards.expert;
  sc.optimizer_s = owned_params * bytes.optimizer_traffic / c.device.hbm_bytes_per_s;
  // Interference of the data-parallel traffic hidden behind compute (the overlapped gradient
  // reduction, at most all of it; the hidden part of the parameter gather) slows that compute by
  // overlap_interference x its time; charged once per iteration, with the optimizer step.
  const bool reduce_overlapped = p.grad_sync == GradSync::kOverlapped && p.overlap_grad_reduce;
  sc.optimizer_s += cal.overlap_interference * ((reduce_overlapped ? grad_sync : 0.0) + param_gather - sc.param_gather_s);
  sc.memory_capacity_bytes = cluster.gpu.memory_bytes;

  // Chunk costs for the replay: communication and ZeRO-3 traffic go with the pass that waits for
  // them; the gradient reduction is split by each chunk's share of the parameters.
  sc.chunks.resize(static_cast<std::size_t>(v));
  for (int ch = 0; ch < v; ++ch) {
    const ChunkPart& q = parts[static_cast<std::size_t>(ch)];
    const double layer_share = st.layers > 0 ? static_cast<double>(q.layers) / st.layers : 1.0 / v;
    const double chunk_params = q.dense_params + q.expert_params;
    sim::ChunkCost& cc = sc.chunks[static_cast<std::size_t>(ch)];
    // With pipelining, each chunk pass pays its scheduling and send/receive launch overhead.
    const double chunk_overhead = p.pp > 1 ? cal.pipeline_chunk_overhead_s : 0.0;
    cc.forward_s = q.forward_with_comm_s() + layer_share * zero3_forward_s + chunk_overhead;
    cc.backward_weight_s = q.weight_grad_s;
    cc.backward_input_s = q.backward_with_comm_s() - q.weight_grad_s + layer_share * zero3_backward_s + chunk_overhead;
    // The allocator's fragmentation comes on top of the activations (Calibration::fragmentation).
    cc.activation_bytes = q.kept_bytes * (1 + cal.fragmentation);
    cc.recompute_bytes = q.recompute_bytes * (1 + cal.fragmentation);
    cc.grad_sync_s = st.params > 0 ? grad_sync * chunk_params / st.params : grad_sync / v;
    cc.grad_sync_buckets = std::max(1, static_cast<int>(std::ceil(chunk_params / grad_bucket_params(p))));
  }

  st.compute_s = total.forward_s + total.backward_s + total.recompute_s;
  st.forward_s = total.forward_with_comm_s() + zero3_forward_s;
  st.backward_s = total.backward_with_comm_s() + zero3_backward_s;
  out.tp_s = total.tp_forward_s + total.tp_backward_s + total.recompute_tp_s;
  out.cp_s = total.cp_forward_s + total.cp_backward_s + total.recompute_cp_s;
  out.ep_s = total.ep_forward_s + total.ep_backward_s + total.recompute_ep_s;
  out.zero3_s = zero3_forward_s + zero3_backward_s;
  out.kept_bytes = total.kept_bytes;
  out.recompute_bytes = total.recompute_bytes;
  out.recompute_flops = total.recompute_flops;

  st.memory =
      static_memory(p, bytes, shards, buffer_bytes, dense_params, expert_params, largest_layer_params(), logits_bytes(s));
  sc.static_memory_bytes = st.memory.total_bytes();
  return out;
}

StageCostModel::StageCostModel(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                               const ParallelConfig& config, const Calibration& calibration,
                               const EstimateOptions& options)
    : impl_(std::make_unique<Impl>(model, cluster, training, config, calibration, options)) {}

StageCostModel::~StageCostModel() = default;

const ParallelConfig& StageCostModel::config() const { return impl_->config; }
int StageCostModel::num_microbatches() const { return impl_->microbatches; }
double StageCostModel::memory_limit_bytes() const {
  return impl_->c.cluster.gpu.memory_bytes * (1 - impl_->options.memory_margin);
}

bool StageCostModel::layers_alike() const {
  const ModelSpec& m = impl_->c.model;
  return !m.moe || (m.moe->first_dense_layers == 0 && m.moe->layer_freq == 1);
}

double StageCostModel::model_work_s() const {
  const ChunkPart whole = impl_->chunk(0, impl_->c.model.num_layers, 0, true, true);
  return whole.forward_with_comm_s() + whole.backward_with_comm_s();
}

StageWork StageCostModel::stage_work(int rank, int first_layer, int layers, int recomputed, double in_flight) const {
  const Impl& im = *impl_;
  const int v = im.config.vpp;
  const int chunk_layers = layers / v;
  ChunkPart total;
  for (int ch = 0; ch < v; ++ch)
    total += im.chunk(first_layer + ch * chunk_layers, chunk_layers, im.recomputed_in_chunk(recomputed, ch),
                      rank == 0 && ch == 0, rank == im.config.pp - 1 && ch == v - 1);
  const auto [zero3_forward_s, zero3_backward_s] = im.zero3_exposed_s(total);
  StageWork w;
  w.time_s = total.forward_with_comm_s() + total.backward_with_comm_s() + zero3_forward_s + zero3_backward_s +
             (im.config.pp > 1 ? 2 * v * im.c.calibration.pipeline_chunk_overhead_s : 0.0);
  const MemoryBreakdown mem = static_memory(im.config, im.bytes, im.shards, im.buffer_bytes, total.dense_params,
                                            total.expert_params, im.largest_layer_params(), im.logits_bytes(rank));
  w.memory_bytes =
      mem.total_bytes() + (1 + im.c.calibration.fragmentation) * (in_flight * total.kept_bytes + total.recompute_bytes);
  return w;
}

// What planning_bounds needs of a group's layer costs, computed on its first call.
struct StageCostModel::Impl::BoundBasis {
  ChunkPart whole;                // the whole model, one micro-batch, no full recompute
  ChunkPart layer;                // one decoder layer (all alike when layers_alike())
  ChunkPart layer_recomputed;     // the same, fully recomputed
  ChunkPart embedding, head;      // the first / last rank's extra
  // Of any layer, the embedding or the head: the forward's share of the passes, and the share of
  // forward and input gradient (B) without the weight gradient (W): what fills a ZB-H1 pipeline.
  double smallest_forward_share, smallest_critical_share;
  // peak_in_flight() of the last pipeline shape asked for (candidates come grouped by shape).
  sim::PipelineShape in_flight_shape{0, 0, 0};
  Schedule in_flight_schedule = Schedule::kOneFOneB;
  std::vector<int> in_flight;
};

namespace {

double work_s(const ChunkPart& c) { return c.forward_with_comm_s() + c.backward_with_comm_s(); }

// ZeRO-3's per-micro-batch traffic for a part of the model without the collectives' latency
// terms: {gather - hide·forward, gather + scatter - hide·backward}. Collective times are
// latency + bytes/bandwidth, so these are linear in the part (the value for a sum of parts is the
// sum of the values) and, clamped at 0, below zero3_exposed_s() of any rank holding the part.
struct Zero3Traffic {
  const Fabric& fabric;
  GroupPlacement dense_group, expert_group;
  double gather_bytes, grad_bytes, hide;

  [[nodiscard]] std::pair<double, double> linear_s(const ChunkPart& part) const {
    auto bandwidth_s = [&](double (*collective)(double, const GroupPlacement&, const Fabric&), double bytes,
                           const GroupPlacement& g) { return collective(bytes, g, fabric) - collective(0, g, fabric); };
    const double gather = bandwidth_s(all_gather_s, part.dense_params * gather_bytes, dense_group) +
                          bandwidth_s(all_gather_s, part.expert_params * gather_bytes, expert_group);
    const double scatter = bandwidth_s(reduce_scatter_s, part.dense_params * grad_bytes, dense_group) +
                           bandwidth_s(reduce_scatter_s, part.expert_params * grad_bytes, expert_group);
    return {gather - hide * part.forward_s, gather + scatter - hide * part.backward_s};
  }
  // At least the exposed traffic of any set of ranks holding the part together.
  [[nodiscard]] double floor_s(const ChunkPart& part) const {
    const auto [forward, backward] = linear_s(part);
    return std::max(0.0, forward) + std::max(0.0, backward);
  }
  // What an extra part (embedding, head) adds at least to a rank's exposed traffic, whatever else
  // the rank holds: max(0, x + e) >= max(0, x) + min(0, e). Not positive.
  [[nodiscard]] double extra_floor_s(const ChunkPart& part) const {
    const auto [forward, backward] = linear_s(part);
    return std::min(0.0, forward) + std::min(0.0, backward);
  }
};

// min over k_s >= 1 with sum k_s = blocks of max_s w_s, w_s = k_s·block + [s = 0]·embedding +
// [s = pp-1]·head: the least bottleneck of any stage assignment of alike blocks of vpp layers. The
// optimum equals one of k·block (+ embedding or + head); feasibility of a cap C is
// sum_s floor((C - extra_s) / block) >= blocks, monotone in C, so each family is binary-searched.
double least_bottleneck_s(double block, double embedding, double head, int blocks, int pp) {
  if (pp == 1) return blocks * block + embedding + head;
  auto fits = [&](double cap) {
    auto most = [&](double extra) { return std::floor((cap - extra) / block + 1e-9); };
    const double first = most(embedding), middle = most(0), last = most(head);
    if (first < 1 || last < 1 || (pp > 2 && middle < 1)) return false;
    return first + last + (pp - 2) * middle >= blocks;
  };
  double best = std::numeric_limits<double>::infinity();
  for (double extra : {0.0, embedding, head}) {
    int lo = 1, hi = blocks;
    if (!fits(hi * block + extra)) continue;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (fits(mid * block + extra)) hi = mid;
      else lo = mid + 1;
    }
    best = std::min(best, lo * block + extra);
  }
  return best;
}

// min over w_s >= 0 with sum w_s = W of max_s (rho·sum_{j<s} w_j + m·w_s): all terms equal, w_s
// geometric with ratio (1 - rho/m), giving W·rho / (1 - (1 - rho/m)^p), and m·W/p as rho -> 0.
double pipeline_relaxation_s(double work, double rho, double m, double pp) {
  return rho > 0 ? work * rho / (1 - std::pow(1 - rho / m, pp)) : m * work / pp;
}

}  // namespace

StageCostModel::Impl::BoundBasis& StageCostModel::Impl::bound_basis() const {
  if (basis) return *basis;
  const ModelSpec& model = c.model;
  const ChunkPart embedding = chunk(0, 0, 0, true, false), head = chunk(0, 0, 0, false, true);
  std::vector<ChunkPart> parts{chunk(0, 1, 0, false, false), embedding, head};
  if (model.moe)  // the other kind of layer (MoE after dense ones, or dense between)
    for (int layer : {model.moe->first_dense_layers, model.moe->first_dense_layers + 1})
      if (layer < model.num_layers) parts.push_back(chunk(layer, 1, 0, false, false));
  double forward_share = 1, critical_share = 1;
  for (const ChunkPart& part : parts) {
    const double w = work_s(part);
    if (w <= 0) continue;
    forward_share = std::min(forward_share, part.forward_with_comm_s() / w);
    critical_share = std::min(critical_share, (w - part.weight_grad_s) / w);
  }
  basis = std::make_unique<BoundBasis>(BoundBasis{chunk(0, model.num_layers, 0, true, true),
                                                  chunk(0, 1, 0, false, false), chunk(0, 1, 1, false, false),
                                                  embedding, head, forward_share, critical_share});
  return *basis;
}

PlanningBounds planning_bounds(const StageCostModel& layers, const ParallelConfig& q) {
  const StageCostModel::Impl& im = layers.impl();
  const ParallelConfig& p = im.config;
  if (q.tp != p.tp || q.cp != p.cp || q.ep != p.ep || q.expert_tp() != p.expert_tp() || q.mbs != p.mbs ||
      q.sequence_parallel != p.sequence_parallel || q.recompute != p.recompute || q.tp_comm_overlap != p.tp_comm_overlap)
    throw Error(fmt::format("planning_bounds: candidate '{}' has other layer costs than '{}'", to_string(q), to_string(p)));
  const ModelSpec& model = im.c.model;
  const Calibration& cal = im.c.calibration;
  StageCostModel::Impl::BoundBasis& basis = im.bound_basis();
  const ShardDegrees shards = shard_degrees(q);
  const double m = q.num_microbatches(im.c.training);
  const double pp = q.pp;
  PlanningBounds b;

  // --- Memory ------------------------------------------------------------------------------------------
  const bool full = q.recompute == RecomputeMode::kFull;
  const double smallest_kept_layer =
      full ? std::min(im.dense.input_bytes, model.moe ? im.moe.input_bytes : im.dense.input_bytes)
           : std::min(im.dense.activation_bytes, model.moe ? im.moe.activation_bytes : im.dense.activation_bytes);
  const double fragmented = 1 + cal.fragmentation;
  const double kept_layer = fragmented * smallest_kept_layer;
  const double gathered_layer = im.largest_layer_params();  // ZeRO-3: on every rank
  const double candidate_buffers = im.buffer_bytes_for(q);
  auto static_bytes = [&](double dense_params, double expert_params, double logits) {
    return static_memory(q, im.bytes, shards, candidate_buffers, dense_params, expert_params, gathered_layer, logits)
        .total_bytes();
  };
  // (1) At least the mean stage: 1/p of everything, one micro-batch in flight.
  const double mean = static_bytes(basis.whole.dense_params / pp, basis.whole.expert_params / pp,
                                   im.c.tokens * im.vocab_local * 6 / pp) +
                      kept_layer * model.num_layers / pp;
  // (2) Stage s holds L_s layers and the schedule's in-flight micro-batches e_s of them:
  // M_s >= fixed + (params + e_s·kept per layer)·L_s = fixed + a_s·L_s. The fullest stage is
  // smallest when all are equal: M = fixed + L / sum_s 1/a_s.
  const sim::PipelineShape shape{q.pp, q.vpp, static_cast<int>(m)};
  if (shape.ranks != basis.in_flight_shape.ranks || shape.chunks != basis.in_flight_shape.chunks ||
      shape.microbatches != basis.in_flight_shape.microbatches || q.schedule != basis.in_flight_schedule) {
    basis.in_flight = sim::schedule_for(q.schedule).peak_in_flight(shape);
    basis.in_flight_shape = shape;
    basis.in_flight_schedule = q.schedule;
  }
  const double fixed = static_bytes(0, 0, 0);
  double layer_static = static_bytes(im.dense.params_dense, im.dense.params_expert, 0) - fixed;
  if (model.moe) layer_static = std::min(layer_static, static_bytes(im.moe.params_dense, im.moe.params_expert, 0) - fixed);
  double inverse_sum = 0;
  for (int held : basis.in_flight) inverse_sum += 1 / (layer_static + kept_layer * held / q.vpp);
  b.memory_bytes = std::max(mean, fixed + model.num_layers / inverse_sum);

  // Recompute that memory forces (recompute=full, alike layers): stage s fits its L_s layers'
  // full activations only up to L_s = (limit - fixed) / a_s; each layer beyond needs
  // a_s / (e_s·(full - input activations)) layers recomputed. However the layers are spread, at
  // least (L - sum_s (limit - fixed)/a_s) x min_s of that are recomputed, each re-running its forward.
  double forced_recompute_s = 0;
  if (full && layers.layers_alike()) {
    const double full_layer = fragmented * basis.layer.kept_bytes;
    const double saved_per_recompute = full_layer - fragmented * basis.layer_recomputed.kept_bytes;
    const double room = layers.memory_limit_bytes() - fixed;
    double fitting_layers = 0, recompute_per_layer = std::numeric_limits<double>::infinity();
    for (int held : basis.in_flight) {
      const double in_flight = static_cast<double>(held) / q.vpp;
      const double per_layer = layer_static + in_flight * full_layer;
      fitting_layers += std::max(0.0, room) / per_layer;
      if (saved_per_recompute > 0) recompute_per_layer = std::min(recompute_per_layer, per_layer / (in_flight * saved_per_recompute));
    }
    const double excess = model.num_layers - fitting_layers;
    if (excess > 0 && recompute_per_layer < std::numeric_limits<double>::infinity())
      forced_recompute_s = excess * recompute_per_layer *
                           (basis.layer_recomputed.recompute_s + basis.layer_recomputed.recompute_comm_s());
  }

  // --- Time ---------------------------------------------------------------------------------------------
  // The candidate's ZeRO-3 traffic (its shard groups, not the group model's).
  const ClusterSpec& gpn = im.c.cluster;
  const Zero3Traffic zero3{im.c.fabric, place_group(static_cast<int>(shards.dense), q.tp, gpn),
                           place_group(static_cast<int>(shards.expert), q.expert_tp() * q.ep, gpn),
                           im.c.fp8.param_gather_bytes, im.bytes.grad,
                           q.overlap_param_gather ? cal.dp_overlap : 0.0};
  const bool zero3_on = q.zero == 3;
  const double compute_work = work_s(basis.whole);
  // Sum over ranks of the passes: compute, traffic no layout hides, recompute memory forces.
  const double work = compute_work + (zero3_on ? zero3.floor_s(basis.whole) : 0) + forced_recompute_s;
  double pipeline = 0;
  switch (q.schedule) {
    case Schedule::kGPipe:
    case Schedule::kOneFOneB: pipeline = pipeline_relaxation_s(work, 1, m, pp); break;
    case Schedule::kInterleaved1F1B:  // one chunk, 1/v of a rank's work when the layers are alike
      pipeline = pipeline_relaxation_s(work, layers.layers_alike() ? 1.0 / q.vpp : 0, m, pp);
      break;
    case Schedule::kZeroBubbleH1:
      // Rank s starts after the first forward passed the ranks before it and runs all of its
      // passes (fill: the forward's compute share). Or: it runs its forwards and B passes, then the
      // last micro-batch's B passes back through the ranks before it (rho = 1 on forward + B work,
      // which holds all ZeRO-3 traffic and recompute).
      pipeline = std::max({pipeline_relaxation_s(compute_work, basis.smallest_forward_share, m, pp), m * work / pp,
                           pipeline_relaxation_s(basis.smallest_critical_share * compute_work + (work - compute_work),
                                                 1, m, pp)});
      break;
  }
  // Whole layers: every rank runs its m micro-batches one after another, so the iteration takes at
  // least m x the smallest possible bottleneck over assignments of blocks of vpp alike layers (the
  // embedding on the first rank, the output layer on the last); with few blocks per rank this is
  // well above the continuous bound.
  if (layers.layers_alike()) {
    double block = q.vpp * work_s(basis.layer), embedding = work_s(basis.embedding), head = work_s(basis.head);
    if (zero3_on) {
      block += q.vpp * zero3.floor_s(basis.layer);
      embedding += zero3.extra_floor_s(basis.embedding);
      head += zero3.extra_floor_s(basis.head);
    }
    pipeline = std::max(pipeline, m * least_bottleneck_s(block, embedding, head, model.num_layers / q.vpp, q.pp));
  }
  b.iteration_time_s = pipeline + cal.iteration_overhead_s;
  return b;
}

namespace {

// Everything estimate() and pipeline_problem() share.
struct Analysis {
  Estimate out;
  sim::PipelineProblem problem;
  // Per rank, per micro-batch: exposed TP (incl. recompute), CP, EP and ZeRO-3 communication.
  std::vector<double> stage_tp, stage_cp, stage_ep, stage_z3;
  std::vector<double> kept_per_microbatch, recompute_bytes;  // per rank
  double hardware_extra_flops = 0;
  double fragmentation = 0;
};

Analysis analyse(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                 const ParallelConfig& requested, const Calibration& cal, const EstimateOptions& options) {
  const StageCostModel stage_model(model, cluster, training, requested, cal, options);
  const StageCostModel::Impl& im = stage_model.impl();
  Analysis a;
  Estimate& out = a.out;
  out.config = im.config;
  const ParallelConfig& p = out.config;
  const int m = im.microbatches;
  out.num_microbatches = m;

  // Pipeline P2P: one activation (or its gradient) per micro-batch per stage boundary. Rank r holds
  // GPUs [r·S, (r+1)·S), S = tp·cp·dp; a boundary inside one node uses NVLink, else the network.
  const int rank_gpus = p.tp * p.cp * p.dp;
  const double p2p_bytes = im.c.tokens * model.hidden_size * kActivationBytes / im.sp_div;
  auto boundary_p2p_s = [&](int r) {
    const int gpn = cluster.scale_up_gpus();
    const bool wrap = r == p.pp - 1;
    const bool same_node = wrap ? p.pp * rank_gpus <= gpn
                                : (r * rank_gpus) / gpn == ((r + 2) * rank_gpus - 1) / gpn;
    return p2p_s(p2p_bytes, same_node ? im.c.fabric.intra : im.c.fabric.inter);
  };

  // --- Pipeline problem ------------------------------------------------------------------------------
  sim::PipelineProblem& pb = a.problem;
  pb.microbatches = m;
  pb.schedule = p.schedule;
  // Without overlap-grad-reduce Megatron reduces all gradients after the flush (finalize_model_grads):
  // that is the shifted placement.
  pb.grad_sync = (p.grad_sync == GradSync::kOverlapped && !p.overlap_grad_reduce) ? GradSync::kShifted : p.grad_sync;
  pb.overlap_window = cal.dp_overlap;
  pb.blocking_p2p = !p.overlap_p2p;
  pb.iteration_overhead_s = cal.iteration_overhead_s;
  pb.stages.resize(static_cast<std::size_t>(p.pp));

  const int v = p.vpp;
  const int virtual_stages = p.pp * v;
  // First decoder layer of each virtual stage (chunk c of rank r is virtual stage c·p + r).
  const std::vector<int> layers_of = chunk_layers(p);
  std::vector<int> first_layer_of(static_cast<std::size_t>(virtual_stages) + 1, 0);
  for (int k = 0; k < virtual_stages; ++k) first_layer_of[k + 1] = first_layer_of[k] + layers_of[static_cast<std::size_t>(k)];

  out.stages.resize(static_cast<std::size_t>(p.pp));
  a.stage_tp.assign(p.pp, 0);
  a.stage_cp.assign(p.pp, 0);
  a.stage_ep.assign(p.pp, 0);
  a.stage_z3.assign(p.pp, 0);
  a.kept_per_microbatch.assign(p.pp, 0);
  a.recompute_bytes.assign(p.pp, 0);
  std::vector<ChunkPart> parts(static_cast<std::size_t>(v));
  const std::vector<int> recomputed_per_stage = recomputed_layers_per_stage(p);
  for (int s = 0; s < p.pp; ++s) {
    std::vector<int> layers_in_chunk(static_cast<std::size_t>(v));
    for (int ch = 0; ch < v; ++ch) layers_in_chunk[static_cast<std::size_t>(ch)] = layers_of[static_cast<std::size_t>(ch * p.pp + s)];
    const std::vector<int> recomputed =
        im.recomputed_per_chunk(recomputed_per_stage[static_cast<std::size_t>(s)], layers_in_chunk);
    for (int ch = 0; ch < v; ++ch) {
      const int k = ch * p.pp + s;
      parts[static_cast<std::size_t>(ch)] = im.chunk(first_layer_of[k], layers_in_chunk[static_cast<std::size_t>(ch)],
                                                     recomputed[static_cast<std::size_t>(ch)], k == 0,
                                                     k == virtual_stages - 1);
    }
    RankCost rank = im.rank_cost(s, parts);
    rank.sim.p2p_next_s = p.pp > 1 ? boundary_p2p_s(s) : 0;
    pb.stages[static_cast<std::size_t>(s)] = std::move(rank.sim);
    out.stages[static_cast<std::size_t>(s)] = rank.estimate;
    a.stage_tp[s] = rank.tp_s;
    a.stage_cp[s] = rank.cp_s;
    a.stage_ep[s] = rank.ep_s;
    a.stage_z3[s] = rank.zero3_s;
    a.hardware_extra_flops += rank.recompute_flops * m * (static_cast<double>(p.dp) * p.tp * p.cp);
    a.kept_per_microbatch[s] = rank.kept_bytes;
    a.recompute_bytes[s] = rank.recompute_bytes;
  }
  a.fragmentation = cal.fragmentation;
  out.memory_limit_bytes = stage_model.memory_limit_bytes();
  return a;
}

// Fills the estimate from the replay: time, breakdown, activation memory, throughput, fit.
Estimate finish(Analysis&& a, const sim::SimulationResult& replay, const ModelSpec& model, const ClusterSpec& cluster,
                const TrainingSpec& training, const EstimateOptions& options) {
  Estimate out = std::move(a.out);
  const ParallelConfig& p = out.config;
  const int m = out.num_microbatches;
  out.iteration_time_s = replay.iteration_time_s;
  out.bubble_fraction = replay.bubble_fraction;

  // Activations per rank: the replay's peak, split back into the activations proper and the
  // allocator fragmentation on top of them.
  for (int s = 0; s < p.pp; ++s) {
    StageEstimate& st = out.stages[static_cast<std::size_t>(s)];
    const double peak = replay.stages[static_cast<std::size_t>(s)].peak_activation_bytes / (1 + a.fragmentation);
    st.memory.activations_bytes = peak;
    st.memory.other_bytes += a.fragmentation * peak;
    st.in_flight_microbatches =
        a.kept_per_microbatch[s] > 0 ? (peak - a.recompute_bytes[s]) / a.kept_per_microbatch[s] : 0;
  }

  // --- Breakdown, on the bottleneck rank (most work per micro-batch) ------------------------------
  // Its timeline is: passes (compute + exposed TP/CP/EP/ZeRO-3), blocking sends, idle before the
  // flush (bubble, incl. waiting on P2P), gradient reduction exposed after its last pass (incl.
  // waiting for slower ranks' updates), its optimizer step and the fixed overhead.
  int b = 0;
  for (int s = 1; s < p.pp; ++s)
    if (out.stages[s].forward_s + out.stages[s].backward_s > out.stages[b].forward_s + out.stages[b].backward_s) b = s;
  const StageEstimate& bs = out.stages[static_cast<std::size_t>(b)];
  const sim::StageResult& rs = replay.stages[static_cast<std::size_t>(b)];
  TimeBreakdown& br = out.breakdown;
  br.compute_s = m * bs.compute_s;
  br.tp_comm_s = m * a.stage_tp[b];
  br.cp_comm_s = m * a.stage_cp[b];
  br.ep_comm_s = m * a.stage_ep[b];
  br.zero3_comm_s = m * a.stage_z3[b];
  br.bubble_s = rs.bubble_s;
  br.pp_comm_s = rs.blocking_p2p_s;
  br.optimizer_s = a.problem.stages[static_cast<std::size_t>(b)].optimizer_s;
  br.overhead_s = a.problem.iteration_overhead_s;
  br.dp_comm_s = out.iteration_time_s - (br.compute_s + br.tp_comm_s + br.cp_comm_s + br.ep_comm_s + br.zero3_comm_s +
                                         br.bubble_s + br.pp_comm_s + br.optimizer_s + br.overhead_s);

  // --- Throughput ------------------------------------------------------------------------------------
  const GpuSpec& gpu = cluster.gpu;
  const double peak = gpu.peak_flops_per_s(training.precision);
  const double tokens = static_cast<double>(training.global_batch) * training.seq_len;
  const double n_gpus = cluster.num_gpus();
  out.tokens_per_s = tokens / out.iteration_time_s;
  out.model_flops = training_flops_per_token(model, training.seq_len) * tokens;
  out.hardware_flops = out.model_flops + a.hardware_extra_flops;
  out.mfu = out.model_flops / (out.iteration_time_s * n_gpus * peak);
  out.hfu = out.hardware_flops / (out.iteration_time_s * n_gpus * peak);
  out.tflops_per_gpu = out.model_flops / (out.iteration_time_s * n_gpus) / 1e12;

  // --- Fit -----------------------------------------------------------------------------------------
  int worst = 0;
  for (int s = 0; s < p.pp; ++s) {
    const double total = out.stages[static_cast<std::size_t>(s)].memory.total_bytes();
    if (total > out.peak_memory_bytes) {
      out.peak_memory_bytes = total;
      worst = s;
    }
  }
  out.fits = out.peak_memory_bytes <= out.memory_limit_bytes;
  if (!out.fits) {
    const MemoryBreakdown& w = out.stages[static_cast<std::size_t>(worst)].memory;
    out.reason = fmt::format(
        "stage {} needs {} but the limit is {} ({} x (1 - margin {})): weights {}, grads {}, optimizer {}, "
        "activations {}, other {}",
        worst, units::format_bytes(out.peak_memory_bytes), units::format_bytes(out.memory_limit_bytes),
        units::format_bytes(gpu.memory_bytes), options.memory_margin, units::format_bytes(w.weights_bytes),
        units::format_bytes(w.grads_bytes), units::format_bytes(w.optimizer_bytes),
        units::format_bytes(w.activations_bytes), units::format_bytes(w.other_bytes));
  }
  return out;
}

}  // namespace

sim::PipelineProblem pipeline_problem(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                                      const ParallelConfig& config, const Calibration& calibration,
                                      const EstimateOptions& options) {
  return analyse(model, cluster, training, config, calibration, options).problem;
}

sim::PipelineProblem pipeline_problem_with_stage_meshes(const ModelSpec& model, const ClusterSpec& cluster,
                                                        const TrainingSpec& training, const ParallelConfig& config,
                                                        const std::vector<StageMesh>& meshes,
                                                        const Calibration& calibration, const EstimateOptions& options) {
  if (static_cast<int>(meshes.size()) != config.pp)
    throw Error(fmt::format("{} stage meshes given but pp={}", meshes.size(), config.pp));
  int gpus = 0;
  for (const StageMesh& mesh : meshes) gpus += mesh.dp * mesh.tp;
  if (gpus != cluster.num_gpus())
    throw Error(fmt::format("the stage meshes use {} GPUs but the cluster has {}", gpus, cluster.num_gpus()));
  const int microbatch_sequences = config.dp * config.mbs;
  sim::PipelineProblem problem;
  for (int i = 0; i < config.pp; ++i) {
    const StageMesh& mesh = meshes[static_cast<std::size_t>(i)];
    auto fail = [&](const std::string& rule) {
      return Error(fmt::format("stage mesh {} ({}x{}): {}", i, mesh.dp, mesh.tp, rule));
    };
    if (microbatch_sequences % mesh.dp != 0)
      throw fail(fmt::format("dp={} does not divide the micro-batch of dp*mbs = {} sequences", mesh.dp,
                             microbatch_sequences));
    ParallelConfig stage_config = config;
    stage_config.dp = mesh.dp;
    stage_config.tp = mesh.tp;
    stage_config.mbs = microbatch_sequences / mesh.dp;
    stage_config.op = 0;
    // The stage is costed as if the whole pipeline ran on meshes like its own.
    ClusterSpec stage_cluster = cluster;
    const int stage_gpus = config.pp * mesh.dp * mesh.tp;
    if (stage_gpus % cluster.gpus_per_node != 0)
      throw fail(fmt::format("pp x dp x tp = {} GPUs do not fill whole {}-GPU nodes", stage_gpus, cluster.gpus_per_node));
    stage_cluster.nodes = stage_gpus / cluster.gpus_per_node;
    sim::PipelineProblem stage_problem;
    try {
      stage_problem = pipeline_problem(model, stage_cluster, training, stage_config, calibration, options);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("stage mesh {} ({}x{})", i, mesh.dp, mesh.tp));
    }
    if (i == 0) problem = stage_problem;
    else problem.stages[static_cast<std::size_t>(i)] = stage_problem.stages[static_cast<std::size_t>(i)];
  }
  return problem;
}

Estimate estimate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                  const ParallelConfig& config, const Calibration& calibration, const EstimateOptions& options) {
  Analysis a = analyse(model, cluster, training, config, calibration, options);
  const sim::SimulationResult replay = sim::simulate(a.problem, sim::SimulationOptions{.record = false});
  return finish(std::move(a), replay, model, cluster, training, options);
}

std::optional<Estimate> estimate_if_faster(const ModelSpec& model, const ClusterSpec& cluster,
                                           const TrainingSpec& training, const ParallelConfig& config,
                                           double faster_than_s, const Calibration& calibration,
                                           const EstimateOptions& options) {
  Analysis a = analyse(model, cluster, training, config, calibration, options);
  if (sim::iteration_time_lower_bound_s(a.problem) >= faster_than_s) return std::nullopt;
  const sim::SimulationResult replay = sim::simulate(a.problem, sim::SimulationOptions{.record = false});
  return finish(std::move(a), replay, model, cluster, training, options);
}

}  // namespace paratune
