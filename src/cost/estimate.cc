// The analytic iteration model. Reading order: GEMM/roofline helpers, one layer's costs, one
// stage's costs, the pipeline, data-parallel synchronisation, memory, and the totals.
#include "paratune/cost/estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "paratune/cost/collectives.h"
#include "paratune/cost/model_stats.h"
#include "paratune/spec/units.h"

namespace paratune {
namespace {

constexpr double kActivationBytes = 2;  // bf16/fp16 activations (fp8 GEMMs keep bf16 activations)

// Achieved rates of the GPU under the calibration.
struct Device {
  double peak_flops_per_s;
  double gemm_efficiency_max;
  double half_dim;
  double attention_flops_per_s;
  double hbm_bytes_per_s;
};

// GEMM of (m x k) · (k x n): 2mnk FLOPs (Kaplan et al. 2020) at peak x eff_max x f(m)f(n)f(k),
// f(d) = d/(d + d_half), or at HBM speed for the 2(mk + kn + mn) bytes it touches, whichever is
// slower (roofline; Williams et al. 2009).
double gemm_s(const Device& d, double m, double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double f = (m / (m + d.half_dim)) * (n / (n + d.half_dim)) * (k / (k + d.half_dim));
  const double compute = 2 * m * n * k / (d.peak_flops_per_s * d.gemm_efficiency_max * f);
  const double memory = kActivationBytes * (m * k + k * n + m * n) / d.hbm_bytes_per_s;
  return std::max(compute, memory);
}

// Everything one layer costs for one micro-batch on one GPU.
struct LayerCost {
  double forward_compute_s = 0;
  double backward_compute_s = 0;
  double selective_recompute_s = 0;  // core-attention forward re-run (recompute=selective)
  double forward_flops = 0;          // executed on this GPU, forward
  double attention_forward_s = 0;
  double tp_forward_s = 0, tp_backward_s = 0;  // exposed
  double cp_forward_s = 0, cp_backward_s = 0;  // exposed
  double ep_forward_s = 0, ep_backward_s = 0;  // exposed
  double params_dense = 0;   // non-expert parameters on this GPU
  double params_expert = 0;  // expert parameters on this GPU
  double activation_bytes = 0;
  double input_bytes = 0;  // the layer input kept under full recompute
};

struct Context {
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const TrainingSpec& training;
  const ParallelConfig& config;
  const Calibration& calibration;
  Device device;
  Fabric fabric;
  double tokens;  // tokens of one micro-batch on one GPU's sequence shard: mbs * seq / cp
};

Link link_for(const GroupPlacement& g, const Fabric& f) { return g.spans_nodes() ? f.inter : f.intra; }

LayerCost layer_cost(const Context& c, bool moe_layer) {
  const ModelSpec& m = c.model;
  const ParallelConfig& p = c.config;
  const Device& d = c.device;
  const double t = p.tp;
  const double tokens = c.tokens;
  const double h = m.hidden_size;
  const double heads_local = m.num_attention_heads / t;
  const double sp_div = p.sequence_parallel ? t : 1;
  LayerCost L;

  // --- GEMMs of attention ------------------------------------------------------------------------
  double qk_dim = m.head_size(), v_dim = m.head_size(), attention_gemm_s = 0, attention_gemm_flops = 0;
  auto gemm = [&](double rows, double n, double k) {
    attention_gemm_flops += 2 * rows * n * k;
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

  // --- Core attention --------------------------------------------------------------------------------
  // Scores and values: 2·tokens·seq·(qk + v)·heads FLOPs forward. Flash attention skips the masked
  // half of a causal mask (Dao 2023, FlashAttention-2 Sec. 3.1.1); unfused attention computes it
  // and writes s^2 scores to HBM (softmax, optional dropout: ~8-12 bytes per score).
  const double seq = c.training.seq_len;
  const bool flash = c.training.flash_attention;
  const double causal_factor = (m.causal && flash) ? 0.5 : 1.0;
  const double attention_flops = 2 * tokens * seq * (qk_dim + v_dim) * heads_local * causal_factor;
  double attention_s = attention_flops / d.attention_flops_per_s;
  if (!flash) {
    // Unfused: two batched GEMMs per head, (seq x seq x head_dim), at the GEMM rate, plus the
    // scores' round trips through HBM.
    const double f = (seq / (seq + d.half_dim)) * (seq / (seq + d.half_dim)) *
                     (qk_dim / (qk_dim + d.half_dim));
    attention_s = attention_flops / (d.peak_flops_per_s * d.gemm_efficiency_max * f) +
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
    return gemm_s(d, rows, gate * ffn_local, h) + gemm_s(d, rows, h, ffn_local);
  };
  const LayerParams lp = layer_params(m, moe_layer);
  double moe_permute_bytes = 0;
  if (moe_layer) {
    const MoeSpec& e = *m.moe;
    const double etp = p.expert_tp();
    const double local_experts = static_cast<double>(e.num_experts) / p.ep;
    // Each token visits top_k experts; with expert-TP = etp the routed rows on one GPU are
    // tokens·top_k·etp/tp, spread over its local experts (balanced routing assumed).
    const double routed_rows = tokens * e.top_k * etp / t;
    const double rows_per_expert = routed_rows / local_experts;
    const double fe_local = e.expert_ffn_hidden_size / etp;
    mlp_s += local_experts * (gemm_s(d, rows_per_expert, gate * fe_local, h) + gemm_s(d, rows_per_expert, h, fe_local));
    mlp_flops += 2 * routed_rows * fe_local * h * (gate + 1);
    activation_elements += routed_rows * fe_local;
    mlp_s += gemm_s(d, tokens / sp_div, e.num_experts, h);  // router
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
  const double hidden_elements = tokens * h / sp_div;
  double elementwise_bytes = kActivationBytes * (2 * 2 + 2 * 3) * hidden_elements;
  if (m.dropout) elementwise_bytes += 2 * 2.5 * kActivationBytes * hidden_elements;
  if (m.position_embedding == PositionEmbedding::kRotary)
    elementwise_bytes += 2 * kActivationBytes * tokens * (heads_local + std::max(1.0, m.kv_heads() / t)) * qk_dim;
  elementwise_bytes += kActivationBytes * (gate + 1) * activation_elements + moe_permute_bytes;
  const double elementwise_s = elementwise_bytes / d.hbm_bytes_per_s;

  const double overhead = c.calibration.layer_overhead_s;
  L.forward_compute_s = attention_gemm_s + attention_s + mlp_s + elementwise_s + overhead;
  // Backward: input-gradient and weight-gradient GEMMs (2x forward), attention 2-2.5x.
  L.backward_compute_s = 2 * (attention_gemm_s + mlp_s + elementwise_s + overhead) + attention_backward_s;
  L.selective_recompute_s = attention_s;
  L.forward_flops = attention_gemm_flops + attention_flops + mlp_flops;

  // --- Tensor-parallel communication --------------------------------------------------------------
  // Megatron-LM (Shoeybi et al. 2019, Sec. 3): two all-reduces of the b·s·h activation forward
  // (after attention and after the MLP) and two backward; with sequence parallelism each becomes a
  // reduce-scatter + all-gather pair of the same volume (Korthikanti et al. 2022, Sec. 4.2.2).
  const GroupPlacement tp_group = place_group(p.tp, 1, c.cluster.gpus_per_node);
  const double activation_message = tokens * h * kActivationBytes;
  const double tp_exposed = p.tp_comm_overlap ? 1 - c.calibration.tp_overlap : 1.0;
  L.tp_forward_s = 2 * all_reduce_s(activation_message, tp_group, c.fabric) * tp_exposed;
  L.tp_backward_s = L.tp_forward_s;

  // --- Context-parallel ring attention -----------------------------------------------------------
  // Each of cp-1 steps passes this rank's K and V shard to the next rank while attending to the
  // current one (Liu et al. 2023, Ring Attention); backward passes K, V and dK, dV. Only the part
  // not hidden behind the attention kernel is exposed.
  if (p.cp > 1) {
    const GroupPlacement cp_group = place_group(p.cp, p.tp, c.cluster.gpus_per_node);
    const double kv_heads_local = m.mla ? heads_local : std::max(1.0, m.kv_heads() / t);
    const double kv_bytes = tokens * kv_heads_local * (qk_dim + v_dim) * kActivationBytes;
    const double ring_s = (p.cp - 1) * p2p_s(kv_bytes, link_for(cp_group, c.fabric));
    L.cp_forward_s = std::max(0.0, ring_s - attention_s);
    L.cp_backward_s = std::max(0.0, 2 * ring_s - attention_backward_s);
  }

  // --- Expert-parallel all-to-all -------------------------------------------------------------------
  // Dispatch and combine forward, and the same two backward (GShard, Lepikhin et al. 2020);
  // each rank sends its tokens' top_k copies of the hidden state.
  if (moe_layer && p.ep > 1) {
    const GroupPlacement ep_group = place_group(p.ep, p.tp, c.cluster.gpus_per_node);
    const double a2a = all_to_all_s(tokens * m.moe->top_k * h * kActivationBytes / t, ep_group, c.fabric);
    L.ep_forward_s = 2 * a2a;
    L.ep_backward_s = 2 * a2a;
  }

  L.activation_bytes = layer_activation_bytes(m, c.training, p, moe_layer);
  L.input_bytes = kActivationBytes * hidden_elements;
  return L;
}

// Number of MoE layers among decoder layers [0, end).
int moe_layers_below(const ModelSpec& m, int end) {
  if (!m.moe || end <= m.moe->first_dense_layers) return 0;
  const int span = end - m.moe->first_dense_layers;
  return (span + m.moe->layer_freq - 1) / m.moe->layer_freq;
}

// Micro-batches whose activations a stage holds at its peak.
double in_flight(const ParallelConfig& p, int stage, int microbatches) {
  if (p.pp == 1) return 1;
  if (p.schedule == Schedule::kGPipe) return microbatches;
  if (p.vpp == 1) return std::min(microbatches, p.pp - stage);  // 1F1B: stage i holds p - i
  // Interleaved 1F1B (Megatron-LM schedules.py): rank r runs 2(p-r-1) + (v-1)p warm-up chunk
  // forwards, then one more before its first backward; a chunk is 1/v of the stage.
  const int chunks = std::min(microbatches * p.vpp, 2 * (p.pp - stage - 1) + (p.vpp - 1) * p.pp + 1);
  return static_cast<double>(chunks) / p.vpp;
}

}  // namespace

double layer_activation_bytes(const ModelSpec& m, const TrainingSpec& training, const ParallelConfig& p,
                              bool moe_layer) {
  // Korthikanti et al. 2022, Sec. 4.1, per layer, bytes, s·b = tokens, 16-bit activations:
  //   attention block 11·sbh + 5·a·s²·b, MLP block 19·sbh, two layer norms 4·sbh = 34·sbh + 5as²b.
  // Split by what tensor parallelism shards: the LN inputs (4), QKV input (2), MLP input (2) and
  // two dropout masks (2) are replicated over TP unless sequence parallelism splits them (/t); the
  // rest is always /t. Generalised here tensor by tensor.
  const double t = p.tp;
  const double sp_div = p.sequence_parallel ? t : 1;
  const double tokens = static_cast<double>(p.mbs) * training.seq_len / p.cp;
  const double h = m.hidden_size;
  const double heads_local = m.num_attention_heads / t;
  const double b = kActivationBytes;
  double replicated = (2 * b + b + b) * tokens * h;  // two LN inputs, QKV input, MLP input
  if (m.dropout) replicated += 2 * 1 * tokens * h;    // residual dropout masks, 1 byte each
  double sharded = 0;
  double qk_dim = m.head_size(), v_dim = m.head_size();
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
    replicated += b * tokens * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim);  // latent vectors
    sharded += b * tokens * heads_local * (2 * qk_dim + v_dim);                         // Q, K, V
  } else {
    const double kv_local = std::max(1.0, m.kv_heads() / t);
    sharded += b * tokens * (heads_local + 2 * kv_local) * m.head_size();  // Q, K, V (6sbh for MHA)
  }
  sharded += b * tokens * heads_local * v_dim;  // attention output = projection input (2sbh)
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
    const double routed_rows = tokens * e.top_k * etp / t;
    const double fe_local = e.expert_ffn_hidden_size / etp;
    sharded += b * routed_rows * h;                       // permuted expert inputs
    sharded += b * routed_rows * fe_local * (gate + 1);   // fc1 output(s) + activation output
    sharded += 4 * tokens / sp_div * e.num_experts;       // router logits/probabilities (fp32)
    if (e.num_shared_experts > 0)
      sharded += b * tokens * (e.num_shared_experts * e.shared_ffn() / t) * (gate + 1);
  } else {
    sharded += b * tokens * (m.ffn_hidden_size / t) * (gate + 1);  // fc1 output (8sbh) + GeLU output (8sbh)
  }
  return replicated / sp_div + sharded;
}

Estimate estimate(const ModelSpec& model, const ClusterSpec& cluster, const TrainingSpec& training,
                  const ParallelConfig& requested, const Calibration& cal, const EstimateOptions& options) {
  Estimate out;
  out.config = resolve(requested, model, cluster, training);
  const ParallelConfig& p = out.config;
  const GpuSpec& gpu = cluster.gpu;
  const double peak = gpu.peak_flops_per_s(training.precision);
  const Context c{model,
                  cluster,
                  training,
                  p,
                  cal,
                  Device{peak, cal.gemm_efficiency_for(gpu.name), cal.gemm_half_efficiency_dim,
                         peak * cal.attention_efficiency, gpu.hbm_bandwidth_bytes_per_s * cal.hbm_efficiency},
                  Fabric{Link{cluster.intra_node_bandwidth_bytes_per_s * cal.intra_node_bandwidth_efficiency,
                              cluster.intra_node_latency_s},
                         Link{cluster.inter_node_bandwidth_bytes_per_s * cal.inter_node_bandwidth_efficiency,
                              cluster.inter_node_latency_s}},
                  static_cast<double>(p.mbs) * training.seq_len / p.cp};
  const int m = p.num_microbatches(training);
  out.num_microbatches = m;
  const Device& d = c.device;

  const LayerCost dense = layer_cost(c, false);
  LayerCost moe;
  if (model.moe) moe = layer_cost(c, true);

  const double t = p.tp;
  const double sp_div = p.sequence_parallel ? t : 1;
  const double h = model.hidden_size;
  const double vocab_local = static_cast<double>(model.vocab_size) / t;
  const ParamCounts counts = count_parameters(model);
  const double grad_bytes = training.fp32_grad_accumulation ? 4 : 2;
  const double weight_bytes = training.precision == Precision::kFP8 ? 3 : 2;  // bf16 + fp8 copy
  const double optimizer_bytes = training.optimizer == Optimizer::kSGD ? 8 : 12;  // fp32 master (+m) (+v)
  // Optimizer step, bytes per locally owned parameter: Adam reads+writes master, m, v (24), reads
  // the fp32 grad (4), writes the bf16 weight (2); SGD with momentum: 16 + 4 + 2.
  const double optimizer_traffic = training.optimizer == Optimizer::kSGD ? 22 : 30;

  // Optimizer-state sharding: dense parameters over op x cp ranks (cp ranks hold the same weights),
  // expert parameters over their share of the expert-data-parallel group.
  const int expert_dp = p.dp * p.cp / p.ep;
  const double dense_shard = p.zero > 0 ? static_cast<double>(p.op) * p.cp : 1;
  const double expert_shard = p.zero > 0 ? std::max(1.0, static_cast<double>(expert_dp) * p.op / p.dp) : 1;
  const GroupPlacement dense_shard_group = place_group(static_cast<int>(dense_shard), p.tp, cluster.gpus_per_node);
  const GroupPlacement dense_replica_group =
      place_group(p.zero > 0 ? p.dp / p.op : p.dp * p.cp, p.tp * static_cast<int>(dense_shard), cluster.gpus_per_node);
  const GroupPlacement expert_shard_group = place_group(static_cast<int>(expert_shard), p.tp * p.ep, cluster.gpus_per_node);
  const GroupPlacement expert_replica_group =
      place_group(p.zero > 0 ? static_cast<int>(expert_dp / expert_shard) : expert_dp,
                  p.tp * p.ep * static_cast<int>(expert_shard), cluster.gpus_per_node);

  // Pipeline P2P: one activation (or its gradient) per micro-batch per stage boundary.
  const GroupPlacement pp_group = place_group(p.pp, p.tp * p.cp * p.dp, cluster.gpus_per_node);
  const double p2p_bytes = c.tokens * h * kActivationBytes / sp_div;
  const double p2p_one_s = p.pp > 1 ? p2p_s(p2p_bytes, link_for(pp_group, c.fabric)) : 0;

  out.stages.resize(static_cast<std::size_t>(p.pp));
  double hardware_extra_flops = 0;
  double dp_exposed_max = 0, optimizer_max = 0;
  double sum_stage_s = 0, max_stage_s = -1;
  int bottleneck = 0;
  std::vector<double> stage_tp(p.pp), stage_cp(p.pp), stage_ep(p.pp), stage_z3(p.pp);
  int first_layer = 0;
  for (int s = 0; s < p.pp; ++s) {
    StageEstimate& st = out.stages[static_cast<std::size_t>(s)];
    st.layers = p.stage_layers[static_cast<std::size_t>(s)];
    const int n_moe = moe_layers_below(model, first_layer + st.layers) - moe_layers_below(model, first_layer);
    const int n_dense = st.layers - n_moe;
    first_layer += st.layers;
    const bool first = s == 0, last = s == p.pp - 1;
    st.recomputed_layers = p.recompute != RecomputeMode::kFull ? 0
                           : p.recompute_layers < 0        ? st.layers
                                                           : std::min(p.recompute_layers, st.layers);
    // Recomputed layers are taken from the dense ones first (they are the cheaper kind to redo).
    const int rc_dense = std::min(st.recomputed_layers, n_dense);
    const int rc_moe = st.recomputed_layers - rc_dense;

    auto sum = [&](double LayerCost::*field) { return n_dense * dense.*field + n_moe * moe.*field; };
    double fwd = sum(&LayerCost::forward_compute_s);
    double bwd = sum(&LayerCost::backward_compute_s);
    // Full recompute re-runs the forward (and its TP/CP/EP communication) before the backward.
    double recompute_s = rc_dense * (dense.forward_compute_s) + rc_moe * moe.forward_compute_s;
    double recompute_comm_s = rc_dense * (dense.tp_forward_s + dense.cp_forward_s + dense.ep_forward_s) +
                              rc_moe * (moe.tp_forward_s + moe.cp_forward_s + moe.ep_forward_s);
    double recompute_flops = rc_dense * dense.forward_flops + rc_moe * moe.forward_flops;
    if (p.recompute == RecomputeMode::kSelective) {
      recompute_s += sum(&LayerCost::selective_recompute_s);
      recompute_flops += d.attention_flops_per_s * sum(&LayerCost::selective_recompute_s);  // attention re-run
    }
    // Embedding on the first stage (a lookup: memory-bound); output layer and loss on the last:
    // logits GEMM (tokens x V/t x h) and a fused softmax cross-entropy over fp32 logits.
    if (first) {
      fwd += kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
      bwd += 3 * kActivationBytes * c.tokens * h / d.hbm_bytes_per_s;
    }
    if (last) {
      const double head = gemm_s(d, c.tokens, vocab_local, h);
      const double loss = c.tokens * vocab_local * (kActivationBytes + 4 + 4) / d.hbm_bytes_per_s;
      fwd += head + loss;
      bwd += 2 * head + loss;
    }
    const double tp_s = sum(&LayerCost::tp_forward_s) + sum(&LayerCost::tp_backward_s);
    const double cp_s = sum(&LayerCost::cp_forward_s) + sum(&LayerCost::cp_backward_s);
    const double ep_s = sum(&LayerCost::ep_forward_s) + sum(&LayerCost::ep_backward_s);

    // Parameters held by one GPU of this stage (TP/EP-sharded, before ZeRO).
    double dense_params = sum(&LayerCost::params_dense);
    const double expert_params = sum(&LayerCost::params_expert);
    if (first) dense_params += counts.embedding / t;
    if (last) {
      dense_params += (counts.output_layer + h) / t;
      if (model.tie_embeddings && p.pp > 1) dense_params += static_cast<double>(model.vocab_size) * h / t;
    }
    st.params = dense_params + expert_params;

    // --- ZeRO-3: gather each layer's parameters forward and backward, reduce-scatter its
    // gradients, every micro-batch (FSDP FULL_SHARD; Zhao et al. 2023). Prefetch hides it behind
    // the layer's compute; the first layer's gather is always exposed.
    double zero3_s = 0;
    double dp_exposed = 0;
    if (p.zero == 3) {
      const double gather_bytes = training.fp32_param_gather ? 4 : 2;
      const double gather = all_gather_s(dense_params * gather_bytes, dense_shard_group, c.fabric) +
                            all_gather_s(expert_params * gather_bytes, expert_shard_group, c.fabric);
      const double scatter = reduce_scatter_s(dense_params * grad_bytes, dense_shard_group, c.fabric) +
                             reduce_scatter_s(expert_params * grad_bytes, expert_shard_group, c.fabric);
      const double hide = p.overlap_param_gather ? cal.dp_overlap : 0;
      const double first_gather = gather / std::max(1, st.layers);
      zero3_s = std::max(first_gather, gather - hide * fwd) + std::max(first_gather, gather + scatter - hide * bwd);
      // Across replicas (op < dp, hybrid sharding): one all-reduce of the gradient shard.
      dp_exposed = all_reduce_s(dense_params * grad_bytes / dense_shard, dense_replica_group, c.fabric) +
                   all_reduce_s(expert_params * grad_bytes / expert_shard, expert_replica_group, c.fabric);
    } else {
      // --- Data-parallel gradient synchronisation once per iteration ------------------------------
      // ZeRO-0: all-reduce the gradients over dp x cp. ZeRO-1/2 (Rajbhandari et al. 2020; Megatron
      // distributed optimizer): reduce-scatter over the shard group, all-reduce the shard across
      // replicas, all-gather the updated bf16 parameters.
      double grad_sync = 0, param_gather = 0;
      if (p.zero == 0) {
        grad_sync = all_reduce_s(dense_params * grad_bytes, dense_replica_group, c.fabric) +
                    all_reduce_s(expert_params * grad_bytes, expert_replica_group, c.fabric);
      } else {
        grad_sync = reduce_scatter_s(dense_params * grad_bytes, dense_shard_group, c.fabric) +
                    all_reduce_s(dense_params * grad_bytes / dense_shard, dense_replica_group, c.fabric) +
                    reduce_scatter_s(expert_params * grad_bytes, expert_shard_group, c.fabric) +
                    all_reduce_s(expert_params * grad_bytes / expert_shard, expert_replica_group, c.fabric);
        param_gather = all_gather_s(dense_params * 2, dense_shard_group, c.fabric) +
                       all_gather_s(expert_params * 2, expert_shard_group, c.fabric);
      }
      // Overlap: Megatron launches bucketed reductions during the last micro-batch's backward
      // (overlap-grad-reduce) and the parameter gathers during the next forward
      // (overlap-param-gather). grad_sync=in-backward blocks the stage; shifted runs after the flush.
      const bool overlap_grads = p.overlap_grad_reduce && p.grad_sync == GradSync::kOverlapped;
      dp_exposed = overlap_grads ? std::max(0.0, grad_sync - cal.dp_overlap * bwd) : grad_sync;
      dp_exposed += p.overlap_param_gather ? std::max(0.0, param_gather - cal.dp_overlap * fwd) : param_gather;
    }
    dp_exposed_max = std::max(dp_exposed_max, dp_exposed);
    const double owned_params = dense_params / dense_shard + expert_params / expert_shard;
    optimizer_max = std::max(optimizer_max, owned_params * optimizer_traffic / d.hbm_bytes_per_s);

    st.compute_s = fwd + bwd + recompute_s;
    st.forward_s = fwd + sum(&LayerCost::tp_forward_s) + sum(&LayerCost::cp_forward_s) + sum(&LayerCost::ep_forward_s) +
                   zero3_s / 2;
    st.backward_s = st.compute_s + tp_s + cp_s + ep_s + recompute_comm_s + zero3_s - st.forward_s;
    const double stage_s = st.forward_s + st.backward_s;
    stage_tp[s] = tp_s + recompute_comm_s;
    stage_cp[s] = cp_s;
    stage_ep[s] = ep_s;
    stage_z3[s] = zero3_s;
    sum_stage_s += stage_s;
    if (stage_s > max_stage_s) {
      max_stage_s = stage_s;
      bottleneck = s;
    }
    hardware_extra_flops += recompute_flops * m * (static_cast<double>(p.dp) * p.tp * p.cp);

    // --- Memory ----------------------------------------------------------------------------------
    MemoryBreakdown& mem = st.memory;
    const double params = dense_params + expert_params;
    const double sharded_params = dense_params / dense_shard + expert_params / expert_shard;
    mem.weights_bytes = weight_bytes * (p.zero == 3 ? sharded_params : params);
    if (p.zero == 3) {  // two layers' gathered parameters (current + prefetched)
      const double layer_params = std::max(dense.params_dense + dense.params_expert, moe.params_dense + moe.params_expert);
      mem.weights_bytes += 2 * 2 * layer_params;
    }
    mem.grads_bytes = grad_bytes * (p.zero >= 2 ? sharded_params : params);
    mem.optimizer_bytes = optimizer_bytes * (p.zero >= 1 ? sharded_params : params);
    st.in_flight_microbatches = in_flight(p, s, m);
    // Full recompute keeps only each recomputed layer's input; the others keep everything.
    const double kept_per_mb = (n_dense - rc_dense) * dense.activation_bytes + (n_moe - rc_moe) * moe.activation_bytes +
                               rc_dense * dense.input_bytes + rc_moe * moe.input_bytes +
                               (first ? kActivationBytes * c.tokens * h / sp_div : 0);
    double activations = st.in_flight_microbatches * kept_per_mb;
    if (st.recomputed_layers > 0)  // the layer being recomputed holds its full activations once
      activations += std::max(rc_dense > 0 ? dense.activation_bytes : 0, rc_moe > 0 ? moe.activation_bytes : 0);
    mem.activations_bytes = activations;
    // fp32 logits and their gradient on the last stage: tokens x V/t x (2 + 4) bytes.
    const double logits = last ? c.tokens * vocab_local * 6 : 0;
    mem.other_bytes = cal.cuda_context_bytes + cal.comm_buffer_bytes + cal.fragmentation * activations + logits;
  }

  // --- Pipeline -----------------------------------------------------------------------------------
  // 1F1B / GPipe with per-micro-batch stage times t_i: T = (m - 1)·max t_i + Σ t_i, which is
  // (m + p - 1)·t for equal stages (Narayanan et al. 2021, Sec. 2.2). Interleaving with v chunks
  // shrinks the fill and drain v-fold: T = m·max t_i + (Σ t_i - max t_i)/v, i.e. (m + (p-1)/v)·t.
  const double v = p.vpp;
  const double pipeline_s = m * max_stage_s + (sum_stage_s - max_stage_s) / v;
  const StageEstimate& b = out.stages[static_cast<std::size_t>(bottleneck)];
  TimeBreakdown& br = out.breakdown;
  br.compute_s = m * b.compute_s;
  br.tp_comm_s = m * stage_tp[bottleneck];
  br.cp_comm_s = m * stage_cp[bottleneck];
  br.ep_comm_s = m * stage_ep[bottleneck];
  br.zero3_comm_s = m * stage_z3[bottleneck];
  br.bubble_s = pipeline_s - m * max_stage_s;
  // P2P on the critical path: the fill and drain hop through p·v - 1 boundaries each way; in the
  // steady state the transfers overlap with compute unless overlap_p2p is off.
  if (p.pp > 1) {
    const double steady_exposed = p.overlap_p2p ? 1 - cal.p2p_overlap : 1.0;
    br.pp_comm_s = 2 * (p.pp * v - 1) * p2p_one_s + steady_exposed * 2 * m * v * p2p_one_s;
  }
  br.dp_comm_s = dp_exposed_max;
  br.optimizer_s = optimizer_max;
  br.overhead_s = cal.iteration_overhead_s;
  out.iteration_time_s = pipeline_s + br.pp_comm_s + br.dp_comm_s + br.optimizer_s + br.overhead_s;

  // --- Throughput ------------------------------------------------------------------------------------
  const double tokens = static_cast<double>(training.global_batch) * training.seq_len;
  const double n_gpus = cluster.num_gpus();
  out.tokens_per_s = tokens / out.iteration_time_s;
  out.model_flops = training_flops_per_token(model, training.seq_len) * tokens;
  out.hardware_flops = out.model_flops + hardware_extra_flops;
  out.mfu = out.model_flops / (out.iteration_time_s * n_gpus * peak);
  out.hfu = out.hardware_flops / (out.iteration_time_s * n_gpus * peak);
  out.tflops_per_gpu = out.model_flops / (out.iteration_time_s * n_gpus) / 1e12;

  // --- Fit -----------------------------------------------------------------------------------------
  out.memory_limit_bytes = gpu.memory_bytes * (1 - options.memory_margin);
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

}  // namespace paratune
