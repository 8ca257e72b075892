// layer_cost(): what one decoder layer costs (layer_cost.h), section by section: the GEMMs of
// attention, core attention, the MLP or experts, memory-bound element-wise kernels, then the
// tensor-parallel, context-parallel and expert-parallel communication.
#include "layer_cost.h"

#include <algorithm>
#include <cmath>

#include "context_parallel.h"
#include "host_issue.h"
#include "measured_rates.h"
#include "moe.h"
#include "paratune/cost/estimate.h"
#include "paratune/cost/model_stats.h"

namespace paratune::cost_detail {
namespace {

// What a selectively recomputed layer's backward holds on top of its kept activations, one layer
// at a time: the recomputed tensors. torchtitan's per-op SAC: everything it did not save. Megatron's
// modules: what they dropped, except core attention's (its s^2 scores were never counted as a
// working set: the numbers from before the module list stand).
double selective_working_bytes(const Context& c, bool moe_layer) {
  const ParallelConfig& p = c.config;
  if (p.recompute != RecomputeMode::kSelective) return 0;
  // Both sides without offload: what the recompute drops, whatever the offload moves.
  ParallelConfig kept = p, without = p;
  kept.offload_modules = without.offload_modules = 0;
  if (c.training.per_op_selective_recompute) without.recompute = RecomputeMode::kNone;
  else without.recompute_modules &= recompute_module_bit(RecomputeModule::kCoreAttn);
  auto bytes = [&](const ParallelConfig& q) {
    return layer_activation_bytes(c.model, c.training, q, moe_layer, c.fp8.saved_input_bytes, c.moe_load);
  };
  return std::max(0.0, bytes(without) - bytes(kept));
}

}  // namespace

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
  // Of which the norm-fed and activation-fed inputs and FC1's output gradient of a dense layer,
  // whose casts Transformer Engine fuses into the kernels that produce them (cost/fp8.h).
  double fusable_input_elements = 0, fusable_output_elements = 0;

  // --- GEMMs of attention ------------------------------------------------------------------------
  double qk_dim = m.head_size(), v_dim = m.head_size(), attention_gemm_s = 0, attention_gemm_flops = 0;
  // MLA's up-projections (the GEMMs that produce Q and K/V from the latent vectors): what
  // --recompute-modules mla_up_proj re-runs.
  double mla_up_s = 0, mla_up_flops = 0;
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
    if (a.q_lora_rank > 0) attention_gemm_s += gemm(tokens, a.q_lora_rank, h);
    attention_gemm_s += gemm(tokens, a.kv_lora_rank + a.qk_rope_head_dim, h);
    const double flops_before_up = attention_gemm_flops;
    mla_up_s = (a.q_lora_rank > 0 ? gemm(tokens, heads_local * qk_dim, a.q_lora_rank) : gemm(tokens, heads_local * qk_dim, h)) +
               gemm(tokens, heads_local * (a.qk_nope_head_dim + v_dim), a.kv_lora_rank);
    mla_up_flops = attention_gemm_flops - flops_before_up;
    attention_gemm_s += mla_up_s;
    attention_gemm_s += gemm(tokens, h, heads_local * v_dim);
  } else {
    const double kv_local = std::max(1.0, m.kv_heads() / t);  // tp > kv_heads replicates KV heads
    attention_gemm_s += gemm(tokens, (heads_local + 2 * kv_local) * m.head_size(), h);
    fusable_input_elements += tokens * h;  // QKV's input: the input norm's output
    attention_gemm_s += gemm(tokens, h, heads_local * m.head_size());
  }

  // --- Core attention (BF16 unless TrainingSpec::fp8_attention: Device::attention_flops_per_s) --
  // Scores and values: 2·tokens·seq·(qk + v)·heads FLOPs forward. Flash attention skips the masked
  // half of a causal mask (Dao 2023, FlashAttention-2 Sec. 3.1.1) and runs slower on short key
  // blocks (context parallelism shortens them: cost/context_parallel.h); unfused attention
  // computes the whole mask and writes s^2 scores to HBM (softmax, optional dropout: ~8-12 bytes
  // per score).
  const double seq = c.training.seq_len;
  const bool flash = c.training.flash_attention;
  const double causal_factor = (m.causal && flash) ? 0.5 : 1.0;
  const double attention_flops = 2 * tokens * seq * (qk_dim + v_dim) * heads_local * causal_factor;
  double attention_s = flash_attention_forward_s(d, tokens, seq, qk_dim, v_dim, heads_local, m.causal,
                                                 attention_kv_block_tokens(p.cp, seq, m.causal && flash));
  // Flash backward runs 5 matmuls against the forward's 2 (recomputes the scores): 2.5x.
  double attention_backward_s = attention_s * kFlashBackwardOverForward;
  if (flash && p.cp == 1 && !m.mla) {
    // A hardware profile measures flash attention of one micro-batch at context parallelism 1 with
    // equal q/k and v head dims (measured_rates.h).
    if (d.log)
      d.log->add(KernelLog::Attention{.batch = p.mbs,
                                      .seq_len = c.training.seq_len,
                                      .heads = static_cast<int>(std::ceil(heads_local)),
                                      .kv_heads = static_cast<int>(std::max(1.0, std::ceil(m.kv_heads() / t))),
                                      .head_dim = m.head_size(),
                                      .causal = m.causal});
    if (d.measured)
      if (const auto factors = d.measured->attention_factors(m.causal, seq)) {
        attention_s *= factors->forward;
        attention_backward_s *= factors->backward;
      }
  }
  if (!flash) {
    // Unfused: two batched GEMMs per head, (seq x seq x head_dim), at the GEMM rate, plus the
    // scores' round trips through HBM.
    const double f = (seq / (seq + d.half_dim)) * (seq / (seq + d.half_dim)) *
                     (qk_dim / (qk_dim + d.half_dim));
    attention_s = attention_flops / (d.bf16_peak_flops_per_s * d.bf16_efficiency_max * f) +
                  tokens * seq * heads_local * (m.dropout ? 12 : 8) / d.hbm_bytes_per_s;
    attention_backward_s = 2 * attention_s;
  }
  L.attention_forward_s = attention_s;

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
  double moe_permute_bytes = 0, router_bytes = 0, routed_expert_s = 0;
  double shared_expert_s = 0, shared_expert_flops = 0, shared_expert_elements = 0, routed_elements = 0;
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
    routed_expert_s =
        local_experts * (gemm_s(d, rows_per_expert, gate * fe_local, h) + gemm_s(d, rows_per_expert, h, fe_local));
    mlp_s += routed_expert_s;
    mlp_flops += 2 * routed_rows * fe_local * h * (gate + 1);
    activation_elements += routed_rows * fe_local;
    routed_elements = routed_rows * fe_local;
    linear_input_elements += routed_rows * (h + fe_local);
    linear_output_elements += routed_rows * (gate * fe_local + h);
    mlp_s += bf16_gemm_s(d, tokens / sp_div, e.num_experts, h);  // router (BF16/FP32 in every recipe)
    mlp_flops += 2 * tokens / sp_div * e.num_experts * h;
    if (e.num_shared_experts > 0) {
      const double flops_before = mlp_flops;
      shared_expert_elements = tokens * e.num_shared_experts * e.shared_ffn() / t;
      shared_expert_s = mlp(tokens, e.num_shared_experts * e.shared_ffn() / t);
      shared_expert_flops = mlp_flops - flops_before;
      mlp_s += shared_expert_s;
    }
    moe_permute_bytes = 4 * routed_rows * h * kActivationBytes;  // permute + unpermute, read + write
    // Router, after its GEMM: FP32 logits over every expert written, softmax read + write, top-k
    // read, the auxiliary loss's reductions read: ~5 passes of 4 bytes (Megatron-Core router.py
    // keeps router logits in FP32: --moe-router-dtype fp32).
    router_bytes = 5 * 4.0 * tokens / sp_div * e.num_experts;
    L.params_expert = e.num_experts * lp.routed_expert / (p.ep * etp);
  } else {
    mlp_s += mlp(tokens, m.ffn_hidden_size / t);
    // FC1's input (the norm's output), FC2's (the activation's); FC1's output gradient (the
    // activation's backward).
    fusable_input_elements += tokens * (h + m.ffn_hidden_size / t);
    fusable_output_elements += tokens * gate * m.ffn_hidden_size / t;
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
  elementwise_bytes += kActivationBytes * (gate + 1) * activation_elements + moe_permute_bytes + router_bytes;
  const double elementwise_s = elementwise_bytes / d.hbm_bytes_per_s;
  if (!c.fp8.casts_fused_into_norm_and_activation) fusable_input_elements = fusable_output_elements = 0;
  const double cast_forward_s =
      c.fp8.cast_bytes_per_element * (linear_input_elements - fusable_input_elements) / d.hbm_bytes_per_s;
  const double cast_backward_s =
      c.fp8.cast_bytes_per_element * (linear_output_elements - fusable_output_elements) / d.hbm_bytes_per_s;

  L.forward_compute_s = attention_gemm_s + attention_s + mlp_s + elementwise_s + cast_forward_s;
  // Backward: input-gradient and weight-gradient GEMMs (2x forward), attention 2-2.5x.
  L.backward_compute_s = 2 * (attention_gemm_s + mlp_s + elementwise_s) + attention_backward_s + cast_backward_s;
  // Of which the weight-gradient GEMMs (dW = X^T dY, one per forward GEMM) are the W pass of a
  // zero-bubble schedule; the input gradients, attention and element-wise backward are its B pass.
  L.weight_grad_s = attention_gemm_s + mlp_s;
  double core_attention_forward_s = attention_s;  // what core_attn recompute re-runs (+ ring steps below)
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
    core_attention_forward_s += ring.extra_forward_s;
    L.cp_forward_s = ring.exposed_forward_s;
    L.cp_backward_s = ring.exposed_backward_s;
    // Split the hidden transfers as the kernels that hide them: 1 : 2.5.
    hidden_forward_s += ring.hidden_s / 3.5;
    hidden_backward_s += ring.hidden_s * 2.5 / 3.5;
    L.cp_buffer_bytes = ring.buffer_bytes;
  }

  // --- Expert-parallel all-to-all -------------------------------------------------------------------
  // Dispatch and combine forward, and the same two backward (GShard, Lepikhin et al. 2020); each
  // rank sends its tokens' hidden states to their experts' ranks (top_k copies through an
  // all-to-all, or node-deduplicated: cost/moe.h expert_dispatch_s), the busiest receives
  // moe_load x the mean. Megatron-Core orders expert ranks etp innermost, then ep, so an EP group's members are
  // etp ranks apart (parallel_state.py, expert mesh "tp-ep-dp-pp" with tp = etp).
  if (moe_layer && p.ep > 1) {
    const GroupPlacement ep_group = place_group(p.ep, p.expert_tp(), c.cluster);
    const double a2a = expert_dispatch_s(tokens / t * c.moe_load, h * kActivationBytes, *m.moe, p.dispatcher,
                                         ep_group, c.fabric);
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

  // --- Host-side issue time the GPU does not hide (cost/host_issue.h) -------------------------------
  // The MoE host sync splits the forward: the expert GEMMs, the all-to-all and the un-permutation
  // come after it.
  LayerGpuTime gpu;
  gpu.forward_after_sync_s = routed_expert_s + L.ep_forward_s + moe_permute_bytes / 2 / d.hbm_bytes_per_s;
  gpu.forward_before_sync_s =
      L.forward_compute_s + L.tp_forward_s + L.cp_forward_s + L.ep_forward_s - gpu.forward_after_sync_s;
  gpu.backward_s = L.backward_compute_s + L.tp_backward_s + L.cp_backward_s + L.ep_backward_s;
  const HostIssueExposure host = host_issue_exposure(m, p, c.training, moe_layer, gpu, cal);
  L.forward_compute_s += host.forward_s;
  L.backward_compute_s += host.backward_s;

  // --- Selective recompute: each chosen module's forward again, in the backward -------------------
  // (--recompute-modules; the boundaries as Megatron-Bridge docs/training/activation-recomputation.md
  // lists them). FP8 casts and RoPE of a re-run are left out (memory-bound, small beside the GEMMs).
  if (p.recompute == RecomputeMode::kSelective) {
    const double gate_passes = kActivationBytes * (gate + 1);  // activation function: read gate(s), write
    auto recompute = [&](RecomputeModule module, double seconds, double flops, double tp_s = 0, double ep_s = 0) {
      if (!p.recomputes(module)) return;
      L.selective_recompute_s += seconds;
      L.selective_recompute_flops += flops;
      L.selective_recompute_tp_s += tp_s;
      L.selective_recompute_ep_s += ep_s;
    };
    // Core attention (+ the ring's extra steps under CP), its FLOPs at the attention rate as before.
    recompute(RecomputeModule::kCoreAttn, core_attention_forward_s, d.attention_flops_per_s * core_attention_forward_s);
    recompute(RecomputeModule::kMlaUpProj, mla_up_s, mla_up_flops);
    // The separate norms (memory.cc, layernorm_recompute_freed): read + write T·h/sp each.
    const double separate_norms = (m.mla ? 1 : 0) + (moe_layer ? 1 : 0);
    recompute(RecomputeModule::kLayernorm, separate_norms * 2 * kActivationBytes * hidden_elements / d.hbm_bytes_per_s, 0);
    // The MLP block re-runs its GEMMs, activation and, for MoE, routing, permutation and the
    // dispatch/combine all-to-all; its TP collective (one of the layer's two) runs again too.
    if (!moe_layer) {
      recompute(RecomputeModule::kMlp, mlp_s + gate_passes * activation_elements / d.hbm_bytes_per_s, mlp_flops,
                L.tp_forward_s / 2);
    } else {
      recompute(RecomputeModule::kMoe,
                mlp_s + (gate_passes * activation_elements + moe_permute_bytes + router_bytes) / d.hbm_bytes_per_s,
                mlp_flops, L.tp_forward_s / 2, L.ep_forward_s);
      // moe_act: the experts' activation function only ("does not replay dispatch, FC1, or FC2").
      recompute(RecomputeModule::kMoeAct, gate_passes * routed_elements / d.hbm_bytes_per_s, 0);
      // shared_experts inside a recomputed moe runs a third time (nested checkpoints): counted both.
      recompute(RecomputeModule::kSharedExperts, shared_expert_s + gate_passes * shared_expert_elements / d.hbm_bytes_per_s,
                shared_expert_flops);
    }
  }

  L.activation_bytes = layer_activation_bytes(m, c.training, p, moe_layer, c.fp8.saved_input_bytes, c.moe_load);
  L.input_bytes = kActivationBytes * hidden_elements;
  L.selective_working_bytes = selective_working_bytes(c, moe_layer);

  // --- Activation offload: copies on side streams, hidden while they take no longer than the layer --
  // Megatron-Core offloads each module's saved tensors after its forward (D2H stream) and reloads
  // them one group ahead of the backward (H2D stream), so a layer's copies run under its own
  // compute and communication; what exceeds it waits. Not modelled: the HBM traffic of the copies,
  // and other traffic on the same link (GPUDirect RDMA to a NIC behind the same PCIe switch).
  const OffloadBytes offload = layer_offload_bytes(m, c.training, p, moe_layer, c.fp8.saved_input_bytes, c.moe_load);
  if (offload.moved > 0) {
    const double copy_s = offload.moved / c.cluster.gpu.host_link_bandwidth_bytes_per_s;
    L.offload_forward_s = std::max(0.0, copy_s - (L.forward_compute_s + L.tp_forward_s + L.cp_forward_s + L.ep_forward_s));
    L.offload_backward_s =
        std::max(0.0, copy_s - (L.backward_compute_s + L.tp_backward_s + L.cp_backward_s + L.ep_backward_s));
    L.forward_compute_s += L.offload_forward_s;
    L.backward_compute_s += L.offload_backward_s;
    L.offloaded_bytes = offload.freed;
    L.offload_working_bytes = 2 * offload.freed;
  }
  return L;
}

std::size_t DenseLayerCosts::AxesHash::operator()(const Axes& a) const {
  std::size_t h = 0;
  for (const std::size_t v : {std::size_t(a.tp), std::size_t(a.cp), std::size_t(a.mbs), std::size_t(a.sequence_parallel),
                              std::size_t(a.tp_comm_overlap), static_cast<std::size_t>(a.recompute),
                              std::size_t(a.recompute_modules), std::size_t(a.offload_modules)})
    h = h * 1000003u ^ v;
  return h;
}

const LayerCost& DenseLayerCosts::get(const Context& c) {
  const ParallelConfig& p = c.config;
  const Axes axes{p.tp, p.cp, p.mbs, p.sequence_parallel, p.tp_comm_overlap, p.recompute, p.recompute_modules,
                  p.offload_modules};
  auto it = known_.find(axes);
  if (it == known_.end()) it = known_.emplace(axes, layer_cost(c, false)).first;
  return it->second;
}

int moe_layers_below(const ModelSpec& m, int end) {
  if (!m.moe || end <= m.moe->first_dense_layers) return 0;
  const int span = end - m.moe->first_dense_layers;
  return (span + m.moe->layer_freq - 1) / m.moe->layer_freq;
}

}  // namespace paratune::cost_detail
